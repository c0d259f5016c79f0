#!/usr/bin/env python3
"""The collector agent (standalone): spooled reports forwarded to a local crash service, against
curl posting the same files over as many connections (the server's own ceiling, nothing durable on
the client side); idle CPU; the delay from a complete file to its crash on the server.

  agent_bench.py [--crashsym BIN] [--reports 10000] [--connections 4] [--idle 60] [--latency 20] [--json]

1. `--reports` distinct glibc backtrace reports are written into a spool (settled), then
   `crashsym agent --connections N` runs until the spool and its queue are empty: seconds, reports/s,
   the agent's peak RSS (VmHWM) and CPU time. Every report must be accepted by the server once
   (crashsym_crashes_accepted_total on /metrics).
2. The same number of reports POSTed by one `curl --parallel --parallel-max N` to a second app,
   each with an Idempotency-Key as the agent sends:
   seconds (the ceiling the server allows), and the agent's time as a ratio to it.
3. Idle: the agent over an empty spool for `--idle` seconds: CPU time used (inotify: none expected).
4. Latency: `--latency` files renamed into the spool one at a time; for each, the time until the
   server counts it (median, max).
Targets (issue 16): 10,000 reports in <= 30 s with the agent's RSS <= 30 MB; no CPU when idle;
a report on the server <= 1 s after its file is complete.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverkit import Workspace, create_app, default_crashsym  # noqa: E402


def report(marker):
    return (f"crash {marker}: segmentation fault\n./prog(+0x1189)[0x55d0c0a00189]\n"
            "./prog(main+0x2a)[0x55d0c0a001b3]\n/lib/x86_64-linux-gnu/libc.so.6(+0x271ca)[0x7f1c2a8271ca]\n")


def accepted(base):
    text = urllib.request.urlopen(base + "/metrics", timeout=30).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("crashsym_crashes_accepted_total"):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def start_agent(crashsym, base, app, key, spool, state, connections):
    env = dict(os.environ, CRASHSYM_APP_KEY=key)
    agent = subprocess.Popen([crashsym, "agent", "--server", base, "--app-id", app, "--spool", spool, "--state-dir", state,
                              "--connections", str(connections), "--log-level", "warning"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    return agent


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashsym", default=default_crashsym())
    parser.add_argument("--reports", type=int, default=10000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--idle", type=int, default=60)
    parser.add_argument("--latency", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = {"reports": args.reports, "connections": args.connections}

    with Workspace(args.crashsym, "crashsym-agent-bench-") as ws:
        base = ws.serve("--max-crashes-per-minute", "0", "--log-level", "error")
        spool, state = os.path.join(ws.work, "spool"), os.path.join(ws.work, "state")
        os.makedirs(spool)
        past = time.time() - 10
        for index in range(args.reports):
            path = os.path.join(spool, f"r-{index}.txt")
            with open(path, "w") as f:
                f.write(report(index))
            os.utime(path, (past, past))

        # 1. The agent forwards the spool.
        before = accepted(base)
        start = time.monotonic()
        agent = start_agent(args.crashsym, base, ws.app_id, ws.key, spool, state, args.connections)
        queue = os.path.join(state, "queue")
        while os.listdir(spool) or not os.path.isdir(queue) or os.listdir(queue):
            time.sleep(0.05)
        seconds = time.monotonic() - start
        result["agent_seconds"] = round(seconds, 2)
        result["agent_reports_per_s"] = round(args.reports / seconds)
        result["agent_peak_rss_mb"] = peak_rss_mb(agent.pid)
        result["agent_cpu_seconds"] = round(cpu_seconds(agent.pid), 2)
        result["accepted"] = accepted(base) - before
        if result["accepted"] != args.reports:
            sys.exit(f"agent_bench: the server accepted {result['accepted']} of {args.reports} reports")

        # 3. Idle.
        idle_start = cpu_seconds(agent.pid)
        time.sleep(args.idle)
        result["idle_seconds"] = args.idle
        result["idle_cpu_seconds"] = round(cpu_seconds(agent.pid) - idle_start, 3)

        # 4. Latency: complete file (renamed in) to counted by the server.
        delays = []
        for index in range(args.latency):
            scratch = os.path.join(ws.work, f"latency-{index}")
            with open(scratch, "w") as f:
                f.write(report(f"latency-{index}"))
            count = accepted(base)
            start = time.monotonic()
            os.rename(scratch, os.path.join(spool, f"latency-{index}.txt"))
            while accepted(base) == count:
                time.sleep(0.002)
            delays.append(time.monotonic() - start)
        result["latency_median_ms"] = round(statistics.median(delays) * 1000, 1)
        result["latency_max_ms"] = round(max(delays) * 1000, 1)
        agent.terminate()
        agent.wait()

        # 2. The ceiling: curl posting the same bodies over as many connections, to a second app.
        ceiling_key = create_app(args.crashsym, ws.data, "ceiling")
        config = os.path.join(ws.work, "curl.config")
        bodies = os.path.join(ws.work, "bodies")
        os.makedirs(bodies)
        with open(config, "w") as f:
            for index in range(args.reports):
                body = os.path.join(bodies, f"{index}.txt")
                with open(body, "w") as out:
                    out.write(report(f"ceiling-{index}"))
                f.write(f'url = "{base}/api/v1/apps/ceiling/crashes?host=bench"\n')
                f.write(f'header = "Authorization: Bearer {ceiling_key}"\n')
                f.write(f'header = "Idempotency-Key: ceiling-{index}"\n')
                f.write(f'data-binary = "@{body}"\noutput = "/dev/null"\nsilent\nnext\n' if index + 1 < args.reports
                        else f'data-binary = "@{body}"\noutput = "/dev/null"\nsilent\n')
        before = accepted(base)
        start = time.monotonic()
        subprocess.run(["curl", "-sS", "--parallel", "--parallel-max", str(args.connections), "-K", config], check=True,
                       stderr=subprocess.DEVNULL)
        result["curl_seconds"] = round(time.monotonic() - start, 2)
        if accepted(base) - before != args.reports:
            sys.exit("agent_bench: curl's reports were not all accepted")
        result["agent_vs_curl"] = round(result["agent_seconds"] / result["curl_seconds"], 2)

    if args.json:
        print(json.dumps(result, indent=1))
        return
    r = result
    print(f"crashsym agent, {r['reports']} spooled glibc reports to a local crash service over {r['connections']} connections")
    print(f"  agent: spool to server                      {r['agent_seconds']} s ({r['agent_reports_per_s']} reports/s), "
          f"peak RSS {r['agent_peak_rss_mb']} MiB, CPU {r['agent_cpu_seconds']} s")
    print(f"  curl --parallel-max {r['connections']} (server ceiling)        {r['curl_seconds']} s; agent / curl = {r['agent_vs_curl']}")
    print(f"  idle {r['idle_seconds']} s (inotify)                         CPU {r['idle_cpu_seconds']} s")
    print(f"  complete file to stored crash               median {r['latency_median_ms']} ms, max {r['latency_max_ms']} ms")


if __name__ == "__main__":
    main()
