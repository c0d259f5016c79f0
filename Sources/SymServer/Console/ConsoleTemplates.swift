/// The console's Mustache templates and style sheet, compiled into the binary.
///
/// String constants rather than resource files: `crashsym-net` is copied around as one file (next
/// to `crashsym`), and a SwiftPM resource bundle on Linux is a directory found next to the
/// executable at run time, which such a copy would lose. Every `{{value}}` is HTML-escaped by
/// swift-mustache; the only unescaped insertions (`{{{…}}}`) are the page body rendered by these
/// templates and the charts built by `ConsoleChart`, which escapes its own text.
enum ConsoleTemplates {
    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="light dark">
        <title>{{title}} · crashsym</title>
        <link rel="stylesheet" href="{{stylesheet}}">
        </head>
        <body>
        <header class="top">
        <a class="brand" href="/apps">crashsym</a>
        {{#user}}
        <nav aria-label="Account"><span class="who">{{name}}{{#admin}} (admin){{/admin}}</span>
        <form method="post" action="/signout" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Sign out</button></form>
        </nav>
        {{/user}}
        </header>
        <main>
        {{#hasCrumbs}}<nav aria-label="Breadcrumb" class="crumbs"><ol>{{#crumbs}}<li><a href="{{href}}">{{label}}</a></li>{{/crumbs}}</ol></nav>{{/hasCrumbs}}
        {{{body}}}
        </main>
        </body>
        </html>

        """

    static let signIn = """
        <h1>Sign in</h1>
        {{#message}}<p class="error" role="alert">{{message}}</p>{{/message}}
        <form method="post" action="/signin" class="signin">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <input type="hidden" name="next" value="{{next}}">
        <label for="name">Name</label>
        <input id="name" name="name" autocomplete="username" required value="{{name}}">
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required>
        <button type="submit">Sign in</button>
        </form>
        <p class="hint">Accounts are created on the server with <code>crashsym users create NAME</code>.</p>
        """

    static let apps = """
        <h1>Apps</h1>
        {{^apps}}<p>No app is visible to you. An admin grants one with <code>crashsym users grant {{user}} APP</code>.</p>{{/apps}}
        {{#hasApps}}
        <div class="scroll"><table>
        <thead><tr><th scope="col">App</th><th scope="col">Crashes 24 h</th><th scope="col">Crashes 7 d</th><th scope="col">Open groups</th><th scope="col">Latest version</th><th scope="col">Last 14 days</th></tr></thead>
        <tbody>
        {{#apps}}
        <tr><th scope="row"><a href="/apps/{{id}}">{{name}}</a><div class="sub mono">{{id}}</div></th>
        <td class="num">{{day}}</td><td class="num">{{week}}</td><td class="num">{{open}}</td><td>{{latest}}</td><td>{{{sparkline}}}</td></tr>
        {{/apps}}
        </tbody></table></div>
        {{/hasApps}}
        """

    static let groups = """
        <h1>{{app.name}}</h1>
        <p class="tabs"><a href="/apps/{{app.id}}" aria-current="page">Groups</a> · <a href="/apps/{{app.id}}/symbols">Symbols</a> · <a href="/apps/{{app.id}}/webhooks">Webhooks</a></p>
        <section aria-labelledby="chart-title"><h2 id="chart-title">Crashes per day and version, last {{days}} days</h2>{{{chart}}}</section>
        <form method="get" action="/apps/{{app.id}}" class="filters" role="search">
        <label for="q">Signature contains</label><input id="q" name="q" value="{{q}}">
        <label for="version">Version</label><select id="version" name="version"><option value="">any</option>{{#versions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/versions}}</select>
        <label for="state">State</label><select id="state" name="state">{{#states}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/states}}</select>
        <label for="since">Seen in</label><select id="since" name="since">{{#ranges}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/ranges}}</select>
        <label for="sort">Sort</label><select id="sort" name="sort">{{#sorts}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/sorts}}</select>
        <button type="submit">Apply</button>
        </form>
        {{^groups}}<p>No group matches.</p>{{/groups}}
        {{#hasGroups}}
        <div class="scroll"><table class="groups">
        <thead><tr><th scope="col">Group</th><th scope="col">Count</th><th scope="col">First seen</th><th scope="col">Last seen</th><th scope="col">Versions</th><th scope="col">Hosts</th><th scope="col">State</th></tr></thead>
        <tbody>
        {{#groups}}
        <tr><th scope="row"><a href="/apps/{{appID}}/groups/{{id}}">{{title}}</a><div class="sub mono">{{signature}}</div></th>
        <td class="num">{{count}}</td><td><time datetime="{{firstSeen}}">{{firstSeenShort}}</time></td><td><time datetime="{{lastSeen}}">{{lastSeenShort}}</time></td>
        <td>{{versions}}</td><td class="num">{{hosts}}</td><td><span class="state {{state}}">{{state}}</span></td></tr>
        {{/groups}}
        </tbody></table></div>
        {{/hasGroups}}
        {{#next}}<p class="pager"><a rel="next" href="{{next}}">Next {{pageSize}} groups →</a></p>{{/next}}
        <section aria-labelledby="agents-title"><h2 id="agents-title">Agents</h2>
        {{^hasAgents}}<p>No <code>crashsym agent</code> has reported to this app yet (an agent reports with its first crash).</p>{{/hasAgents}}
        {{#hasAgents}}
        <p>Each host's <code>crashsym agent</code> as of its last report: reports waiting in its queue, reports it dropped over <code>--max-queue-mb</code> and reports its crash-storm limit deleted (<code>--max-reports-per-minute</code>), since its state directory was made.</p>
        <div class="scroll"><table class="agents">
        <thead><tr><th scope="col">Host</th><th scope="col">Last seen</th><th scope="col">Queue</th><th scope="col">Dropped</th><th scope="col">Storm-suppressed</th></tr></thead>
        <tbody>
        {{#agents}}<tr class="{{lossClass}}"><th scope="row">{{host}}<div class="sub mono">{{id}}</div></th><td><time datetime="{{reported}}">{{reportedShort}}</time></td><td class="num">{{queue}}</td><td class="num loss">{{dropped}}</td><td class="num">{{suppressed}}</td></tr>{{/agents}}
        </tbody></table></div>
        {{#moreAgents}}<p class="hint">and {{moreAgents}} more (<code>GET /api/v1/apps/{{app.id}}/agents</code> lists them all).</p>{{/moreAgents}}
        {{/hasAgents}}
        </section>
        """

    static let group = """
        <h1>{{group.title}}</h1>
        <p class="mono sig">{{group.signature}}</p>
        <dl class="facts">
        <dt>State</dt><dd><span class="state {{group.state}}">{{group.state}}</span>{{#group.resolvedIn}} (resolved in {{group.resolvedIn}}){{/group.resolvedIn}}{{#group.reopenedIn}} (reopened by {{group.reopenedIn}}){{/group.reopenedIn}}</dd>
        <dt>Crashes</dt><dd>{{group.count}}</dd>
        <dt>First seen</dt><dd>{{group.firstSeen}}</dd><dt>Last seen</dt><dd>{{group.lastSeen}}</dd>
        </dl>
        <div class="actions">
        {{#actions}}<form method="post" action="/apps/{{appID}}/groups/{{groupID}}/state" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="state" value="{{state}}"><button type="submit" name="action" value="{{state}}">{{label}}</button></form>{{/actions}}
        </div>
        <section aria-labelledby="why"><h2 id="why">Why these crashes are one group</h2>
        {{#hasExplanation}}
        <p>The signature is made of the frames marked <strong>signature</strong>; the others were left out for the reason given (docs/grouping.md).</p>
        <div class="scroll"><table>
        <thead><tr><th scope="col">Frame</th><th scope="col">Function</th><th scope="col">Module</th><th scope="col">Role</th><th scope="col">Why</th></tr></thead>
        <tbody>{{#explanation}}<tr class="{{rowClass}}"><td class="num">#{{frame}}{{#inlined}} (inlined){{/inlined}}</td><td class="mono">{{text}}</td><td>{{module}}</td><td>{{role}}</td><td>{{reason}}</td></tr>{{/explanation}}</tbody>
        </table></div>
        {{/hasExplanation}}
        {{^hasExplanation}}<p>{{explanationMissing}}</p>{{/hasExplanation}}
        </section>
        <section aria-labelledby="spread"><h2 id="spread">Versions and hosts</h2>
        {{{chart}}}
        <div class="cols"><div><h3>Versions</h3><ul>{{#versions}}<li>{{version}}: {{count}}</li>{{/versions}}</ul></div>
        <div><h3>Hosts</h3><ul>{{#hosts}}<li class="mono">{{.}}</li>{{/hosts}}{{^hosts}}<li>none reported</li>{{/hosts}}</ul></div></div>
        </section>
        {{#latest}}<section aria-labelledby="latest"><h2 id="latest">Latest crash</h2>{{{latest}}}</section>{{/latest}}
        <section aria-labelledby="list"><h2 id="list">Crashes</h2>
        <div class="scroll"><table>
        <thead><tr><th scope="col">Crash</th><th scope="col">Received</th><th scope="col">Version</th><th scope="col">Host</th><th scope="col">State</th></tr></thead>
        <tbody>{{#crashes}}<tr><td class="mono"><a href="/apps/{{appID}}/crashes/{{id}}">{{id}}</a></td><td>{{received}}</td><td>{{version}}</td><td>{{host}}</td><td>{{state}}</td></tr>{{/crashes}}</tbody>
        </table></div>
        {{#next}}<p class="pager"><a rel="next" href="{{next}}">Older crashes →</a></p>{{/next}}
        </section>
        """

    /// A crash's report: header, stacks and modules (also embedded as the group's latest crash).
    static let report = """
        {{#crashLink}}<p><a href="{{crashLink}}">Open this crash</a></p>{{/crashLink}}
        <dl class="facts">
        {{#facts}}<dt>{{label}}</dt><dd>{{value}}</dd>{{/facts}}
        </dl>
        {{#stacks}}
        <h3>{{name}}{{#crashed}} <span class="badge">crashed</span>{{/crashed}}</h3>
        <div class="scroll"><table class="frames">
        <thead><tr><th scope="col">#</th><th scope="col">Module</th><th scope="col">Function</th><th scope="col">File:line</th><th scope="col">Status</th></tr></thead>
        <tbody>{{#rows}}<tr class="{{rowClass}}"><td class="num">{{index}}</td><td>{{module}}</td><td class="mono fn">{{#inlined}}<span class="inl" aria-label="inlined into the frame below">↳ inlined </span>{{/inlined}}{{function}}</td><td class="mono">{{location}}</td><td>{{status}}{{#reason}}<div class="sub">{{reason}}</div>{{/reason}}</td></tr>{{/rows}}</tbody>
        </table></div>
        {{/stacks}}
        """

    static let crash = """
        <h1>{{title}}</h1>
        <p class="links"><a href="/apps/{{appID}}/crashes/{{id}}/raw">Raw report</a> · <a href="/apps/{{appID}}/crashes/{{id}}/json">JSON</a>{{#groupID}} · <a href="/apps/{{appID}}/groups/{{groupID}}">Group</a>{{/groupID}}</p>
        <form method="post" action="/apps/{{appID}}/crashes/{{id}}/symbolicate" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Symbolicate again</button></form>
        {{#failure}}<p class="error">Processing failed: {{failure}}</p>{{/failure}}
        {{#minidump}}<section aria-labelledby="client"><h2 id="client">Sent by the crash client</h2>
        <dl class="facts">{{#product}}<dt>Product</dt><dd>{{product}}</dd>{{/product}}{{#annotations}}<dt>{{key}}</dt><dd>{{value}}</dd>{{/annotations}}</dl>
        {{#versionNote}}<p>Version: {{versionNote}}</p>{{/versionNote}}
        {{#attachments}}<p>Attached: <a href="/apps/{{appID}}/crashes/{{id}}/attachments/{{index}}">{{filename}}</a> ({{size}} bytes{{#contentType}}, {{contentType}}{{/contentType}})</p>{{/attachments}}
        </section>{{/minidump}}
        {{{report}}}
        <h2>Modules</h2>
        <div class="scroll"><table>
        <thead><tr><th scope="col">Module</th><th scope="col">Build-id</th><th scope="col">Load address</th><th scope="col">Symbols on the server</th></tr></thead>
        <tbody>{{#modules}}<tr><td>{{name}}<div class="sub mono">{{path}}</div></td><td class="mono">{{buildID}}</td><td class="mono">{{load}}</td><td><span class="sym {{symbolsClass}}">{{symbols}}</span></td></tr>{{/modules}}</tbody>
        </table></div>
        """

    static let symbols = """
        <h1>{{app.name}}: symbols</h1>
        <p class="tabs"><a href="/apps/{{app.id}}">Groups</a> · <a href="/apps/{{app.id}}/symbols" aria-current="page">Symbols</a> · <a href="/apps/{{app.id}}/webhooks">Webhooks</a></p>
        <h2>Missing symbols</h2>
        {{^missing}}<p>Every build-id that crashes needed has symbols.</p>{{/missing}}
        {{#hasMissing}}
        <p>Crashes needed these build-ids and the server has no symbols for them. Upload the build that produced them:</p>
        <pre><code>crashsym upload BUILD-DIR --server {{server}} --app-id {{app.id}} --app-key "$CRASHSYM_APP_KEY" --version VERSION</code></pre>
        <div class="scroll"><table>
        <thead><tr><th scope="col">Module</th><th scope="col">Build-id</th><th scope="col">Crashes</th></tr></thead>
        <tbody>{{#missing}}<tr><td>{{name}}</td><td class="mono">{{buildID}}</td><td class="num">{{crashes}}</td></tr>{{/missing}}</tbody>
        </table></div>
        {{/hasMissing}}
        <h2>Versions</h2>
        {{^versions}}<p>No symbols uploaded yet.</p>{{/versions}}
        {{#versions}}
        <h3>{{version}} <span class="sub">uploaded {{created}}</span></h3>
        <div class="scroll"><table>
        <thead><tr><th scope="col">Module</th><th scope="col">Build-id</th><th scope="col">Arch</th><th scope="col">DWARF</th><th scope="col">Debug file</th><th scope="col">Table size</th></tr></thead>
        <tbody>{{#modules}}<tr><td>{{name}}</td><td class="mono">{{buildID}}</td><td>{{arch}}</td><td>{{dwarf}}</td><td>{{debug}}</td><td class="num">{{size}}</td></tr>{{/modules}}</tbody>
        </table></div>
        {{/versions}}
        """

    static let webhooks = """
        <h1>{{app.name}}: webhooks</h1>
        <p class="tabs"><a href="/apps/{{app.id}}">Groups</a> · <a href="/apps/{{app.id}}/symbols">Symbols</a> · <a href="/apps/{{app.id}}/webhooks" aria-current="page">Webhooks</a></p>
        <p class="hint">A webhook is told of new groups, regressions and spikes of this app (docs/webhooks.md).</p>
        {{^webhooks}}<p>This app has no webhook.</p>{{/webhooks}}
        {{#webhooks}}
        <section class="hook" aria-labelledby="hook-{{id}}">
        <h2 id="hook-{{id}}" class="mono">{{url}}</h2>
        <dl class="facts"><dt>Events</dt><dd>{{events}}</dd><dt>Format</dt><dd>{{format}}</dd><dt>Signed</dt><dd>{{signed}}</dd><dt>Created</dt><dd>{{created}}</dd><dt>Id</dt><dd class="mono">{{id}}</dd></dl>
        {{#canEdit}}<form method="post" action="/apps/{{appID}}/webhooks/{{id}}/remove" class="inline"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Remove this webhook</button></form>{{/canEdit}}
        <h3>Last deliveries</h3>
        {{^deliveries}}<p>Nothing delivered yet.</p>{{/deliveries}}
        {{#hasDeliveries}}
        <div class="scroll"><table class="deliveries">
        <thead><tr><th scope="col">Created</th><th scope="col">Event</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Last status</th><th scope="col">Latency</th><th scope="col">Error</th><th scope="col">Next attempt</th></tr></thead>
        <tbody>{{#deliveries}}<tr><td>{{created}}</td><td><a href="/apps/{{appID}}/groups/{{groupID}}">{{event}}</a></td><td><span class="state {{stateClass}}">{{state}}</span></td><td class="num">{{attempts}}</td><td class="num">{{status}}</td><td class="num">{{latency}}</td><td>{{error}}</td><td>{{next}}</td></tr>{{/deliveries}}</tbody>
        </table></div>
        {{/hasDeliveries}}
        </section>
        {{/webhooks}}
        <h2>Add a webhook</h2>
        {{#message}}<p class="error" role="alert">{{message}}</p>{{/message}}
        {{#canEdit}}
        <form method="post" action="/apps/{{app.id}}/webhooks" class="signin">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="url">URL (http or https)</label>
        <input id="url" name="url" type="url" required maxlength="2048" value="{{form.url}}" placeholder="https://hooks.example.com/crashsym">
        <fieldset><legend>Events</legend>
        {{#events}}<label><input type="checkbox" name="events" value="{{value}}"{{#checked}} checked{{/checked}}> {{value}}</label> {{/events}}
        </fieldset>
        <label for="format">Format</label>
        <select id="format" name="format">{{#formats}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/formats}}</select>
        <label for="secret">Secret (optional: deliveries are signed with it; it is never shown again)</label>
        <input id="secret" name="secret" type="password" autocomplete="off" maxlength="256">
        <button type="submit">Add webhook</button>
        </form>
        {{/canEdit}}
        {{^canEdit}}<p>Only an admin adds and removes webhooks (a webhook sends this app's crash data to another server). From a shell: <code>crashsym apps webhooks add {{app.id}} URL</code>.</p>{{/canEdit}}
        """

    static let message = """
        <h1>{{heading}}</h1>
        <p>{{text}}</p>
        <p><a href="/apps">Back to the apps</a></p>
        """

    static let stylesheet = """
        :root{--bg:#fff;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--accent:#0550ae;--row:#f6f8fa;--bad:#a40e26;--ok:#116329;--warn:#7d4e00;--c0:#0550ae;--c1:#bc4c00;--c2:#116329;--c3:#8250df;--c4:#a40e26;--c5:#57606a}
        @media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9da7b3;--line:#30363d;--accent:#6cb6ff;--row:#161b22;--bad:#ff7b72;--ok:#56d364;--warn:#e3b341;--c0:#6cb6ff;--c1:#ffa657;--c2:#56d364;--c3:#d2a8ff;--c4:#ff7b72;--c5:#9da7b3}}
        *{box-sizing:border-box}
        body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
        a{color:var(--accent)}
        .top{display:flex;justify-content:space-between;align-items:center;padding:.5rem 1rem;border-bottom:1px solid var(--line)}
        .brand{font-weight:700;text-decoration:none;font-size:1.1rem}
        .who{margin-right:.5rem;color:var(--muted)}
        main{padding:1rem;max-width:80rem;margin:0 auto}
        h1{font-size:1.4rem;margin:.2rem 0 .6rem;overflow-wrap:anywhere}
        h2{font-size:1.15rem;margin:1.4rem 0 .5rem}
        h3{font-size:1rem;margin:1rem 0 .4rem}
        table{border-collapse:collapse;width:100%}
        th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
        thead th{font-size:.85rem;color:var(--muted);font-weight:600}
        tbody tr:nth-child(even){background:var(--row)}
        tbody th{font-weight:500}
        .scroll{overflow-x:auto}
        .num{text-align:right;font-variant-numeric:tabular-nums}
        .mono,code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem;overflow-wrap:anywhere}
        pre{background:var(--row);padding:.6rem;overflow-x:auto;border:1px solid var(--line)}
        .sub{color:var(--muted);font-size:.8rem;font-weight:400}
        .sig{color:var(--muted)}
        .crumbs ol{list-style:none;padding:0;margin:0 0 .4rem;display:flex;flex-wrap:wrap;gap:.3rem;font-size:.9rem}
        .crumbs li+li:before{content:"/";margin-right:.3rem;color:var(--muted)}
        .facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:.6rem 0}
        .facts dt{color:var(--muted)}.facts dd{margin:0;overflow-wrap:anywhere}
        .filters{display:flex;flex-wrap:wrap;gap:.4rem .6rem;align-items:center;margin:.8rem 0}
        input,select,button{font:inherit;color:inherit;background:var(--bg);border:1px solid var(--line);border-radius:4px;padding:.3rem .5rem}
        button{cursor:pointer;background:var(--row)}
        button:hover{border-color:var(--accent)}
        .inline{display:inline}
        .actions{display:flex;gap:.5rem;margin:.5rem 0}
        .signin{display:grid;gap:.4rem;max-width:22rem}
        .error{color:var(--bad);font-weight:600}
        .hint{color:var(--muted)}
        .state{font-size:.8rem;padding:.05rem .4rem;border-radius:1rem;border:1px solid var(--line)}
        .state.open{color:var(--bad)}.state.resolved{color:var(--ok)}.state.ignored{color:var(--muted)}
        .badge{font-size:.75rem;color:var(--bad);border:1px solid var(--bad);border-radius:1rem;padding:0 .4rem}
        .frames{min-width:46rem}.groups{min-width:40rem}
        .frames tr.inlined td.fn{padding-left:2rem}
        .inl{color:var(--muted)}
        tr.unresolved td{color:var(--warn)}
        tr.role-signature td{font-weight:600}
        .sym.have{color:var(--ok)}.sym.missing{color:var(--bad)}
        .agents{min-width:32rem}tr.lossy td.loss{color:var(--bad);font-weight:600}
        .cols{display:flex;flex-wrap:wrap;gap:2rem}
        .chart{max-width:100%;height:auto}
        .chart text{fill:var(--muted);font-size:11px}
        .chart .axis{stroke:var(--line)}
        .spark{stroke:var(--accent);fill:none;stroke-width:1.5}
        .s0{fill:var(--c0)}.s1{fill:var(--c1)}.s2{fill:var(--c2)}.s3{fill:var(--c3)}.s4{fill:var(--c4)}.s5{fill:var(--c5)}
        .legend{display:flex;flex-wrap:wrap;gap:.8rem;list-style:none;padding:0;margin:.3rem 0;font-size:.85rem}
        .legend svg{vertical-align:middle;margin-right:.25rem}
        .hook{border-top:1px solid var(--line);margin-top:1rem}.deliveries{min-width:46rem}
        fieldset{border:1px solid var(--line);border-radius:4px}fieldset label{margin-right:.8rem}
        @media (max-width:40rem){main{padding:.5rem}th,td{padding:.3rem}.facts{grid-template-columns:1fr}}

        """
}
