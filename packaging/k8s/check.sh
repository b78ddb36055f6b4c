#!/bin/sh
# Validates packaging/k8s without a cluster (CI calls it from packaging/test.sh):
#
#   1. yamllint (strict) on every manifest: syntax, duplicate keys, indentation;
#   2. every JSON file parses (duplicate keys are errors);
#   3. every YAML document is schema-checked against schemas/ (by apiVersion
#      and kind; an unknown kind is an error), and the dashboard against
#      schemas/grafana-dashboard.json;
#   4. cross-checks no schema can express: probes on /health/live and
#      /health/ready, scrape annotations on /metrics and the serving port,
#      PORT / containerPort / weft.conf listen agree, the config mount and
#      -c path agree, the password comes from Secret weft-db, RUNTIME_DIRECTORY
#      is a writable mount, the termination grace period covers preStop +
#      shutdown.grace_s, threads = the CPU limit, the database connection
#      budget, etc/weft.conf's routes are all in the ConfigMap, and the
#      dashboard queries only metrics (and labels) weft exports;
#   5. with WEFT_BIN (a built weft) and WEFT_PLUGIN_PATH (its plugins) set:
#      `weft -t` on the ConfigMap's weft.conf, then a short run of that config
#      on 127.0.0.1 checking that /health/live, /health/ready and /metrics
#      answer as the manifests and the dashboard expect.
#
# Environment: PG_MAX_CONNECTIONS (default 100) is the server's
# max_connections for the budget check. Exits non-zero on any failure.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

# Debian packages only; no apt-get at all when they are already installed.
need="python3 python3-yaml python3-jsonschema yamllint"
missing=""
for p in $need; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "k8s check: installing:$missing" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# 1. yamllint. The routes inside weft.conf make for long lines.
lintconf='{extends: default, rules: {line-length: {max: 160}}}'
if ! yamllint -s -f parsable -d "$lintconf" "$here"/*.yaml >&2; then
  echo "k8s check: FAILED: yamllint found problems (above)" >&2
  exit 1
fi
echo "k8s check: yamllint: ok" >&2

# Debian's interpreter, which has the packages above (not whatever python3 is first on PATH).
exec /usr/bin/python3 - "$here" "$root" <<'PY'
import glob
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import jsonschema
import yaml

HERE, ROOT = sys.argv[1], sys.argv[2]
errors = []


def rel(path):
    return os.path.relpath(path, ROOT)


def fail(where, msg):
    e = f"{where}: {msg}"
    if e not in errors:
        errors.append(e)


def ok(what):
    print(f"k8s check: {what}: ok", file=sys.stderr)


# The metrics weft exports (docs/OPERATIONS.md): name -> (type, labels).
METRICS = {
    "weft_requests_total": ("counter", {"route", "policy", "code"}),
    "weft_request_duration_seconds": ("histogram", {"route", "policy"}),
    "weft_unmatched_requests_total": ("counter", {"code"}),
    "weft_inflight_requests": ("gauge", set()),
    "weft_inflight_requests_seconds_total": ("counter", set()),
    "weft_connections_open": ("gauge", set()),
    "weft_connections_deferred_total": ("counter", set()),
    "weft_pool_size": ("gauge", {"pool"}),
    "weft_pool_busy_workers": ("gauge", {"pool"}),
    "weft_pool_queue_length": ("gauge", {"pool"}),
    "weft_pool_rejected_total": ("counter", {"pool"}),
    "weft_coroutines_live": ("gauge", set()),
    "weft_coroutine_stack_bytes": ("gauge", set()),
    "weft_event_loop_lag_seconds": ("gauge", {"loop"}),
    "weft_blocked_handler_total": ("counter", set()),
    "weft_db_connections_open": ("gauge", set()),
    "weft_db_connections_busy": ("gauge", set()),
    "weft_db_transactions_open": ("gauge", set()),
    "weft_db_connection_waiters": ("gauge", set()),
    "weft_db_reconnects_total": ("counter", set()),
    "weft_db_query_duration_seconds": ("histogram", set()),
    "weft_generation": ("gauge", set()),
    "weft_reloads_total": ("counter", {"outcome"}),
    "weft_build_info": ("gauge", {"version", "abi", "h2o", "libpq"}),
    "process_cpu_seconds_total": ("counter", set()),
    "process_resident_memory_bytes": ("gauge", set()),
    "process_virtual_memory_bytes": ("gauge", set()),
    "process_open_fds": ("gauge", set()),
    "process_max_fds": ("gauge", set()),
    "process_start_time_seconds": ("gauge", set()),
}
# Labels Prometheus' Kubernetes service discovery adds to every series.
TARGET_LABELS = {"namespace", "pod", "instance", "job", "container", "node"}
LIVE, READY, METRICS_PATH = "/health/live", "/health/ready", "/metrics"


# ---------------------------------------------------------------- parsing
def no_dup_pairs(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f, object_pairs_hook=no_dup_pairs)
    except (ValueError, OSError) as e:
        fail(rel(path), f"not valid JSON: {e}")
        return None


class StrictLoader(yaml.SafeLoader):
    pass


def _mapping(loader, node, deep=False):
    seen = set()
    for k, _ in node.value:
        key = loader.construct_object(k, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", k.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)

schemas = {}
for path in sorted(glob.glob(os.path.join(HERE, "schemas", "*.json"))):
    s = load_json(path)
    if s is None:
        continue
    try:
        jsonschema.Draft202012Validator.check_schema(s)
    except jsonschema.SchemaError as e:
        fail(rel(path), f"not a valid JSON Schema: {e.message}")
        continue
    schemas[os.path.basename(path)] = s
if errors:
    for e in errors:
        print(f"k8s check: FAILED: {e}", file=sys.stderr)
    sys.exit(1)
ok(f"{len(schemas)} schemas parse")

BY_KIND = {
    ("v1", "ConfigMap"): "configmap-v1.json",
    ("v1", "Service"): "service-v1.json",
    ("apps/v1", "Deployment"): "deployment-apps-v1.json",
    ("serving.knative.dev/v1", "Service"): "knative-service-serving-v1.json",
}


def validator(name):
    schema = schemas[name]
    try:  # jsonschema >= 4.18
        import referencing

        reg = referencing.Registry().with_resources(
            (s["$id"], referencing.Resource.from_contents(s)) for s in schemas.values())
        return jsonschema.Draft202012Validator(schema, registry=reg)
    except ImportError:  # Debian 12's 4.10
        store = {s["$id"]: s for s in schemas.values()}
        resolver = jsonschema.RefResolver(schema["$id"], schema, store=store)
        return jsonschema.Draft202012Validator(schema, resolver=resolver)


def path_str(p):
    out = ""
    for x in p:
        out += f"[{x}]" if isinstance(x, int) else (f".{x}" if out else str(x))
    return out or "(top level)"


def schema_check(where, doc, name):
    n = 0
    for e in sorted(validator(name).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        msg = e.message
        if e.context:  # anyOf/oneOf: say what the closest branch wanted
            ctx = [c for c in e.context if c.validator != "type"] or e.context
            best = jsonschema.exceptions.best_match(ctx)
            msg += f" ({best.message})"
        desc = e.schema.get("description") if isinstance(e.schema, dict) else None
        if desc:
            msg += f" -- {desc}"
        fail(where, f"{path_str(e.absolute_path)}: {msg}")
        n += 1
    return n == 0


docs = []  # (file, doc)
yamls = sorted(glob.glob(os.path.join(HERE, "*.yaml")))
for path in yamls:
    try:
        with open(path, encoding="utf-8") as f:
            loaded = list(yaml.load_all(f, Loader=StrictLoader))
    except yaml.YAMLError as e:
        fail(rel(path), f"not valid YAML: {e}")
        continue
    for i, d in enumerate(loaded):
        where = f"{rel(path)} (document {i + 1})"
        if not isinstance(d, dict):
            fail(where, "empty or not a mapping")
            continue
        key = (d.get("apiVersion"), d.get("kind"))
        name = (d.get("metadata") or {}).get("name", "?") if isinstance(d.get("metadata"), dict) else "?"
        where = f"{rel(path)}: {'Knative ' if str(key[0]).startswith('serving.knative.dev/') else ''}{key[1]} {name}"
        if key not in BY_KIND:
            fail(where, f"no schema for apiVersion {key[0]!r} kind {key[1]!r} (add one to schemas/)")
            continue
        if schema_check(where, d, BY_KIND[key]):
            docs.append((path, d))
for path in sorted(glob.glob(os.path.join(HERE, "*.json"))):
    load_json(path)
n_schema_errors = len(errors)
if not errors:
    ok(f"{len(docs)} manifests in {len(yamls)} files match their schemas")


def find(kind, api=None, name=None):
    return [(p, d) for p, d in docs if d["kind"] == kind and (api is None or d["apiVersion"] == api)
            and (name is None or d["metadata"]["name"] == name)]


# --------------------------------------------------------------- weft.conf
def strip_comments(text):
    out, i, n, q = [], 0, len(text), False
    while i < n:
        c = text[i]
        if q:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                q = False
        elif c == '"':
            q = True
            out.append(c)
        elif c == "#" or text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def conf_int(text, name, default=None):
    m = re.search(rf"\b{name}\s*[=:]\s*(\d+)\s*;", text)
    return int(m.group(1)) if m else default


def conf_facts(text):
    t = strip_comments(text)
    f = {"text": t}
    m = re.search(r"\blisten\s*[=:]\s*\[\s*\"([^\"]*)\"", t)
    f["listen_port"] = int(m.group(1).rsplit(":", 1)[1]) if m and ":" in m.group(1) else None
    f["threads"] = conf_int(t, "threads")
    f["grace_s"] = conf_int(t, "grace_s", 10)
    db = re.search(r"\bdatabase\s*[=:]\s*\{(.*?)\}\s*;", t, re.S)
    f["database"] = db is not None
    f["pool_connections"] = conf_int(db.group(1), "pool_connections", 0) if db else 0
    f["loop_connections"] = conf_int(db.group(1), "loop_connections", 1) if db else 0
    f["admin_off"] = re.search(r"\badmin\s*[=:]\s*false\s*;", t) is not None
    f["routes"] = set(re.findall(r"\bpath\s*[=:]\s*\"([^\"]+)\"", t))
    return f


conf_text, conf, conf_where, conf_line0 = None, None, "configmap.yaml: weft.conf", 0
cms = find("ConfigMap", name="weft-config")
if not cms:
    fail("configmap.yaml", "no ConfigMap weft-config")
else:
    cm_path, cm = cms[0]
    conf_where = f"{rel(cm_path)}: weft.conf"
    with open(cm_path, encoding="utf-8") as f:  # weft.conf's line 1 is the line after `weft.conf: |`
        conf_line0 = next((i + 1 for i, l in enumerate(f) if re.match(r"\s*weft\.conf:\s*\|", l)), 0)
    conf_text = (cm.get("data") or {}).get("weft.conf")
    if conf_text is None:
        fail(rel(cm_path), "ConfigMap weft-config has no data key weft.conf")
    else:
        conf = conf_facts(conf_text)
        where = f"{rel(cm_path)}: weft.conf"
        if conf["listen_port"] is None:
            fail(where, "no listen address with a port")
        if conf["threads"] is None:
            fail(where, "set threads explicitly: weft's default is the node's CPU count, not the container's limit")
        if not conf["admin_off"]:
            fail(where, "admin = false; is expected in pods (probes and scrapes use the main listener)")
        if not conf["routes"]:
            fail(where, "no routes")
        if re.search(r"\bpid_file\s*[=:]", conf["text"]):
            fail(where, "pid_file cannot be written on the read-only root filesystem")
        etc = os.path.join(ROOT, "etc", "weft.conf")
        if os.path.exists(etc):
            with open(etc, encoding="utf-8") as f:
                missing = sorted(conf_facts(f.read())["routes"] - conf["routes"])
            if missing:
                fail(where, f"routes of etc/weft.conf missing from the ConfigMap: {', '.join(missing)}")


# --------------------------------------------------------------- workloads
def quantity_cores(q):
    s = str(q)
    if s.endswith("m"):
        return float(s[:-1]) / 1000
    return float(s)


def env_of(c):
    return {e["name"]: e for e in c.get("env", [])}


def check_pod(where, meta, pod, knative):
    ann = meta.get("annotations", {})
    cs = pod["containers"]
    c = next((x for x in cs if x.get("name") == "weft"), cs[0])
    env = env_of(c)
    ports = c.get("ports", [])
    port = ports[0]["containerPort"] if ports else None
    if port is None:
        fail(where, "the weft container declares no port")
    if conf and port is not None and conf["listen_port"] != port:
        fail(where, f"containerPort {port} but weft.conf listens on {conf['listen_port']}")
    # PORT: Knative injects it, the Deployment sets it to the container port.
    if not knative:
        if "PORT" not in env or env["PORT"].get("value") != str(port):
            fail(where, f"env PORT must be \"{port}\" (the container port)")
    # Probes.
    for probe, want in (("livenessProbe", LIVE), ("readinessProbe", READY), ("startupProbe", LIVE)):
        p = c.get(probe)
        if p is None:
            if probe != "startupProbe" or not knative:
                fail(where, f"no {probe}")
            continue
        hg = p.get("httpGet")
        if not hg or hg.get("path") != want:
            fail(where, f"{probe} must be an HTTP GET of {want}")
            continue
        if not knative:
            pp = hg.get("port")
            names = {x.get("name"): x["containerPort"] for x in ports}
            if (names.get(pp) if isinstance(pp, str) else pp) != port:
                fail(where, f"{probe} port {pp!r} is not the serving port {port}")
    # Prometheus scrape annotations.
    if ann.get("prometheus.io/scrape") != "true":
        fail(where, 'annotation prometheus.io/scrape must be "true"')
    if ann.get("prometheus.io/path") != METRICS_PATH:
        fail(where, f"annotation prometheus.io/path must be {METRICS_PATH}")
    if ann.get("prometheus.io/port") != str(port):
        fail(where, f"annotation prometheus.io/port must be \"{port}\" (weft serves /metrics on its main port)")
    # Config: -c PATH lies in a read-only mount of ConfigMap weft-config, key weft.conf.
    args = c.get("args", []) + c.get("command", [])
    cfg = args[args.index("-c") + 1] if "-c" in args[:-1] else None
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["mountPath"].rstrip("/"): m for m in c.get("volumeMounts", [])}
    for m in c.get("volumeMounts", []):
        if m["name"] not in vols:
            fail(where, f"volumeMount {m['name']} names no volume")
    for v in vols.values():
        if "configMap" in v and not find("ConfigMap", name=v["configMap"]["name"]):
            fail(where, f"volume {v['name']} uses ConfigMap {v['configMap']['name']}, which is not in packaging/k8s")
    if cfg is None:
        fail(where, "the weft container's args do not give -c CONFIG")
    else:
        d, base = os.path.split(cfg)
        m = mounts.get(d)
        v = vols.get(m["name"]) if m else None
        if not v or v.get("configMap", {}).get("name") != "weft-config":
            fail(where, f"-c {cfg}: {d} is not a mount of ConfigMap weft-config")
        elif not m.get("readOnly"):
            fail(where, f"mount {d} should be readOnly")
        elif base != "weft.conf" and not any(i["path"] == base for i in v["configMap"].get("items", [])):
            fail(where, f"-c {cfg}: the ConfigMap provides weft.conf, not {base}")
    # Database password from the Secret.
    if conf and conf["database"]:
        ref = env.get("PGPASSWORD", {}).get("valueFrom", {}).get("secretKeyRef")
        if ref != {"name": "weft-db", "key": "password"}:
            fail(where, "PGPASSWORD must come from secretKeyRef weft-db/password")
        for e in env.values():
            if "PASS" in e["name"].upper() and "value" in e:
                fail(where, f"env {e['name']} holds a literal value: use a Secret")
    # Security and the writable runtime directory.
    sc, psc = c.get("securityContext", {}), pod.get("securityContext", {})
    if not (sc.get("runAsNonRoot") or psc.get("runAsNonRoot")):
        fail(where, "runAsNonRoot must be true (pod or container)")
    if sc.get("allowPrivilegeEscalation") is not False:
        fail(where, "securityContext.allowPrivilegeEscalation must be false")
    if "ALL" not in sc.get("capabilities", {}).get("drop", []):
        fail(where, "securityContext.capabilities.drop must contain ALL")
    if sc.get("readOnlyRootFilesystem") is not True:
        fail(where, "securityContext.readOnlyRootFilesystem must be true")
    rd = env.get("RUNTIME_DIRECTORY", {}).get("value")
    m = mounts.get((rd or "").rstrip("/"))
    if not rd or not m or m.get("readOnly") or "emptyDir" not in vols.get(m["name"], {}):
        fail(where, "RUNTIME_DIRECTORY must name a writable emptyDir mount (plugin copies; the root fs is read-only)")
    # Resources; threads = CPU limit.
    res = c.get("resources", {})
    for k in ("requests", "limits"):
        for r in ("cpu", "memory"):
            if r not in res.get(k, {}):
                fail(where, f"resources.{k}.{r} is missing")
    lim = res.get("limits", {}).get("cpu")
    if conf and conf["threads"] and lim is not None and math.ceil(quantity_cores(lim)) != conf["threads"]:
        fail(where, f"limits.cpu {lim} but weft.conf threads = {conf['threads']}: keep them equal")
    return c, port


per_pod = None
if conf and conf["database"]:
    per_pod = (conf["threads"] or 0) * conf["loop_connections"] + conf["pool_connections"]
max_conn = int(os.environ.get("PG_MAX_CONNECTIONS", "100"))
budget = max_conn - 10  # superuser_reserved_connections (3) + psql, migrations, monitoring


def check_budget(where, pods, how):
    if per_pod is None:
        return
    need = pods * per_pod
    if need > budget:
        fail(where, f"{how} = {pods} pods x {per_pod} connections = {need} > {budget} "
                    f"(max_connections {max_conn} - 10 reserved; set PG_MAX_CONNECTIONS if yours is larger)")
    else:
        ok(f"{where}: database budget {pods} pods x {per_pod} = {need} <= {budget}")


if n_schema_errors == 0:
    deps = find("Deployment", "apps/v1")
    if not deps:
        fail("deployment.yaml", "no Deployment")
    for path, d in deps:
        where = f"{rel(path)}: Deployment {d['metadata']['name']}"
        spec, tmpl = d["spec"], d["spec"]["template"]
        labels = tmpl["metadata"].get("labels", {})
        if any(labels.get(k) != v for k, v in spec["selector"].get("matchLabels", {}).items()):
            fail(where, "selector.matchLabels does not match the template's labels")
        c, port = check_pod(where, tmpl["metadata"], tmpl["spec"], knative=False)
        sleep = 0
        pre = c.get("lifecycle", {}).get("preStop")
        if not pre:
            fail(where, "no preStop: SIGTERM would race the endpoint removal")
        elif "sleep" in pre:
            sleep = pre["sleep"]["seconds"]
        elif "exec" in pre and pre["exec"]["command"][0] in ("sleep", "/bin/sleep", "/usr/bin/sleep"):
            sleep = float(pre["exec"]["command"][1])
        tgp = tmpl["spec"].get("terminationGracePeriodSeconds", 30)
        if conf and tgp <= sleep + conf["grace_s"]:
            fail(where, f"terminationGracePeriodSeconds {tgp} must exceed preStop {sleep:g} s + shutdown.grace_s {conf['grace_s']} s")
        surge = spec.get("strategy", {}).get("rollingUpdate", {}).get("maxSurge", "25%")
        replicas = spec.get("replicas", 1)
        surge = math.ceil(replicas * int(surge[:-1]) / 100) if isinstance(surge, str) else surge
        check_budget(where, replicas + surge, "replicas + maxSurge")
        for spath, s in find("Service", "v1"):
            sel = s["spec"].get("selector", {})
            if sel and all(labels.get(k) == v for k, v in sel.items()):
                names = {p.get("name") for p in c.get("ports", [])}
                for sp in s["spec"].get("ports", []):
                    tp = sp.get("targetPort", sp["port"])
                    if tp not in names and tp != port:
                        fail(f"{rel(spath)}: Service {s['metadata']['name']}", f"targetPort {tp!r} is not a port of {d['metadata']['name']}")
                break
        else:
            fail(where, "no Service selects its pods")
    kss = find("Service", "serving.knative.dev/v1")
    if not kss:
        fail("knative-service.yaml", "no Knative Service")
    for path, k in kss:
        where = f"{rel(path)}: Knative Service {k['metadata']['name']}"
        tmpl = k["spec"]["template"]
        meta = tmpl.get("metadata", {})
        ann = meta.get("annotations", {})
        check_pod(where, meta, tmpl["spec"], knative=True)
        if ann.get("autoscaling.knative.dev/metric") != "concurrency":
            fail(where, "autoscaling.knative.dev/metric must be concurrency")
        if ann.get("autoscaling.knative.dev/target") != "80":
            fail(where, 'autoscaling.knative.dev/target must be "80"')
        if "containerConcurrency" not in tmpl["spec"]:
            fail(where, "state containerConcurrency (0 = no hard limit)")
        lo, hi = ann.get("autoscaling.knative.dev/min-scale"), ann.get("autoscaling.knative.dev/max-scale")
        if lo is None or hi is None:
            fail(where, "set autoscaling.knative.dev/min-scale and max-scale (max-scale bounds database connections)")
        elif int(hi) < max(int(lo), 1):
            fail(where, f"max-scale {hi} < min-scale {lo}")
        else:
            check_budget(where, int(hi), "max-scale")
if not errors:
    ok("cross-checks (probes, scraping, ports, config mount, secrets, security, shutdown timing, budget, routes)")


# --------------------------------------------------------------- dashboard
DASH = os.path.join(HERE, "grafana-dashboard.json")
dash = load_json(DASH) if os.path.exists(DASH) else None
if dash is None and os.path.exists(DASH):
    pass
elif dash is None:
    fail("grafana-dashboard.json", "missing")
elif schema_check(rel(DASH), dash, "grafana-dashboard.json"):
    names_in = re.compile(r"\b((?:weft|process)_[a-z0-9_]+)\b")
    sel_re = re.compile(r"\b((?:weft|process)_[a-z0-9_]+)\s*\{([^}]*)\}")
    by_re = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
    all_labels = set().union(*(l for _, l in METRICS.values())) | TARGET_LABELS | {"le"}
    used = set()
    ids = set()

    def check_expr(where, expr):
        for n in names_in.findall(expr):
            base = n
            for suf in ("_bucket", "_sum", "_count"):
                if n.endswith(suf) and n[: -len(suf)] in METRICS and METRICS[n[: -len(suf)]][0] == "histogram":
                    base = n[: -len(suf)]
            if base not in METRICS:
                fail(where, f"{n} is not a metric weft exports")
                continue
            used.add(base)
            if base == n and METRICS[n][0] == "histogram":
                fail(where, f"{n} is a histogram: query {n}_bucket, _sum or _count")
        for n, body in sel_re.findall(expr):
            base = re.sub(r"_(bucket|sum|count)$", "", n) if n not in METRICS else n
            allowed = METRICS.get(base, (None, set()))[1] | TARGET_LABELS | ({"le"} if n.endswith("_bucket") else set())
            for lab in re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", body):
                if base in METRICS and lab not in allowed:
                    fail(where, f"{n} has no label {lab!r}")
        for body in by_re.findall(expr):
            for lab in filter(None, (x.strip() for x in body.split(","))):
                if lab not in all_labels:
                    fail(where, f"grouping by {lab!r}, a label no weft metric has")
        if expr.count("(") != expr.count(")"):
            fail(where, "unbalanced parentheses")

    def walk(panels):
        for p in panels:
            where = f"{rel(DASH)}: panel {p.get('id')} {p.get('title')!r}"
            if p["id"] in ids:
                fail(where, "duplicate panel id")
            ids.add(p["id"])
            for t in p.get("targets", []):
                check_expr(where + f" target {t.get('refId')}", t["expr"])
            walk(p.get("panels", []))

    walk(dash["panels"])
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        check_expr(f"{rel(DASH)}: variable {v.get('name')}", q.get("query", "") if isinstance(q, dict) else str(q or ""))
    # Panels must not overlap on Grafana's 24-column grid.
    cells = {}
    for p in dash["panels"]:
        g = p["gridPos"]
        if g["x"] + g["w"] > 24:
            fail(f"{rel(DASH)}: panel {p['id']}", "wider than the 24-column grid")
        for yy in range(g["y"], g["y"] + g["h"]):
            for xx in range(g["x"], min(24, g["x"] + g["w"])):
                if (xx, yy) in cells:
                    fail(f"{rel(DASH)}: panel {p['id']}", f"overlaps panel {cells[(xx, yy)]}")
                    break
                cells[(xx, yy)] = p["id"]
            else:
                continue
            break
    for want in ("weft_requests_total", "weft_request_duration_seconds", "process_resident_memory_bytes"):
        if want not in used:
            fail(rel(DASH), f"no panel uses {want}")
    if not any(e.startswith(rel(DASH)) for e in errors):
        ok(f"dashboard: {len(ids)} panels, {len(used)} weft metrics, all exported")


# --------------------------------------------------------------- weft itself
def run_weft():
    wb, wp = os.environ.get("WEFT_BIN"), os.environ.get("WEFT_PLUGIN_PATH")
    if not wb or not wp:
        print("k8s check: weft -t and the live check skipped: set WEFT_BIN and WEFT_PLUGIN_PATH", file=sys.stderr)
        return
    if conf_text is None:
        return
    env = {k: v for k, v in os.environ.items() if k != "PORT"}
    with tempfile.TemporaryDirectory(prefix="weft-k8s-check.") as tmp:
        cfile = os.path.join(tmp, "weft.conf")
        with open(cfile, "w", encoding="utf-8") as f:
            f.write(conf_text)
        r = subprocess.run([wb, "-t", "-c", cfile], env=env, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            out = (r.stdout + r.stderr).strip()
            # FILE:LINE in the temporary copy -> the line in the ConfigMap's file.
            out = re.sub(re.escape(cfile) + r":(\d+):",
                         lambda m: f"{rel(cm_path)}:{conf_line0 + int(m.group(1))}:", out)
            fail(conf_where, f"`weft -t` refused it:\n{out}")
            return
        ok(f"weft -t: {(r.stdout + r.stderr).strip().splitlines()[-1]}")

        # The same config on a loopback port, with a private RUNTIME_DIRECTORY
        # like the pod's emptyDir. The database need not be there.
        local = re.sub(r"\blisten\s*[=:]\s*\[[^\]]*\]", 'listen = [ "127.0.0.1:0" ]', conf_text, count=1)
        lfile = os.path.join(tmp, "local.conf")
        with open(lfile, "w", encoding="utf-8") as f:
            f.write(local)
        rt = os.path.join(tmp, "run")
        os.mkdir(rt, 0o700)
        env["RUNTIME_DIRECTORY"] = rt
        log = open(os.path.join(tmp, "log"), "w+", encoding="utf-8")
        proc = subprocess.Popen([wb, "-c", lfile], env=env, stdout=log, stderr=log)
        try:
            base = None
            deadline = time.monotonic() + 10
            while base is None and time.monotonic() < deadline and proc.poll() is None:
                log.seek(0)
                m = re.search(r"listening on (http://127\.0\.0\.1:\d+)/", log.read())
                base = m.group(1) if m else None
                time.sleep(0.05)
            if base is None:
                log.seek(0)
                fail("live check", f"weft did not start listening:\n{log.read().strip()}")
                return

            def get(path):
                try:
                    with urllib.request.urlopen(base + path, timeout=10) as resp:
                        return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()
                except urllib.error.HTTPError as e:
                    return e.code, e.headers.get("Content-Type", ""), e.read().decode()

            for path, codes in ((LIVE, (200,)), (READY, (200, 503))):
                st, _, body = get(path)
                try:
                    j = json.loads(body)
                    good = st in codes and j.get("status") in ("UP", "DOWN") and isinstance(j.get("checks"), list)
                    good = good and (j["status"] == "UP") == (st == 200)
                except ValueError:
                    good = False
                if not good:
                    fail("live check", f"GET {path}: {st} {body[:200]!r}, want {codes} with a health JSON body")
            st, ctype, body = get(METRICS_PATH)
            types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M))
            if st != 200 or not ctype.startswith("text/plain"):
                fail("live check", f"GET {METRICS_PATH}: {st} {ctype!r}, want 200 text/plain")
            for n, (t, _) in METRICS.items():
                if types.get(n) != t:
                    fail("live check", f"/metrics: {n} is {types.get(n, 'missing')}, want {t}")
            extra = sorted(set(types) - set(METRICS))
            if extra:
                print(f"k8s check: note: weft also exports {', '.join(extra)} (not in check.sh's list)", file=sys.stderr)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
                fail("live check", "weft did not stop within 20 s of SIGTERM")
            if rc != 0 and not any(e.startswith("live check") for e in errors):
                log.seek(0)
                fail("live check", f"weft exited with {rc} after SIGTERM:\n{log.read().strip()}")
            log.close()
        if not any(e.startswith("live check") for e in errors):
            ok(f"live check: {LIVE}, {READY} and {METRICS_PATH} answer; all {len(METRICS)} metrics exported")


if not errors:
    run_weft()

if errors:
    for e in errors:
        print(f"k8s check: FAILED: {e}", file=sys.stderr)
    print(f"k8s check: {len(errors)} problem(s)", file=sys.stderr)
    sys.exit(1)
print("k8s check: all passed", file=sys.stderr)
PY
