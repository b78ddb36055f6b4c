"""cluster-client.py — the clients packaging/check-cluster.sh needs beyond
wrk and hey, each printing one JSON object on stdout (exit 1 on a failed
check, with the reason on stderr). Debian's python3 with python3-websockets.

  persons BASE                    create, read, find, delete a person under
                                  every policy, each step through BASE
  transfers BASE N CONC           N random transfers (pool, coroutine,
                                  reactive in turn) from CONC clients
  chat MEMBER SENDER N PATH [FLAG]  a member on MEMBER (host:port of a
                                  replica's PROXY listener) receives N
                                  messages posted on SENDER; FLAG is a file
                                  made when sending starts
  prom URL CHECKS.json            evaluates a run's PromQL checks (below)
"""
import asyncio
import concurrent.futures
import http.client
import json
import random
import socket
import sys
import time
import urllib.parse
import urllib.request


def die(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def request(conn, method, path, body=None):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    return r.status, r.getheader("Location"), r.read().decode("utf-8", "replace")


def connect(base):
    u = urllib.parse.urlsplit(base)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=10)


def persons(base):
    errors, steps = [], 0
    for create in ("pool", "coroutine", "reactive"):
        c = connect(base)
        name = f"cluster-{create}-{random.randrange(1 << 30)}"
        body = json.dumps({"name": name, "age": 42, "gender": "FEMALE"})
        st, loc, text = request(c, "POST", f"/{create}/persons", body)
        steps += 1
        if st != 201 or loc is None:
            errors.append(f"POST /{create}/persons: {st} {text}")
            continue
        pid = loc.rsplit("/", 1)[1]
        for read in ("pool", "coroutine", "reactive"):
            st, _, text = request(c, "GET", f"/{read}/persons/{pid}")
            steps += 1
            if st != 200 or name not in text:
                errors.append(f"GET /{read}/persons/{pid}: {st} {text}")
        st, _, text = request(c, "GET", f"/coroutine/persons/name/{name}")
        steps += 1
        if st != 200 or name not in text:
            errors.append(f"GET /coroutine/persons/name/{name}: {st} {text}")
        st, _, text = request(c, "DELETE", f"/{create}/persons/{pid}")
        steps += 1
        if st != 204:
            errors.append(f"DELETE /{create}/persons/{pid}: {st} {text}")
        st, _, text = request(c, "GET", f"/pool/persons/{pid}")
        steps += 1
        if st != 404:
            errors.append(f"GET /pool/persons/{pid} after DELETE: {st} {text}")
    print(json.dumps({"steps": steps, "errors": len(errors)}))
    if errors:
        die("\n".join(errors[:20]))


def transfers(base, n, conc):
    policies = ("pool", "coroutine", "reactive")
    jobs = []
    for i in range(n):
        frm = random.randint(1, 100)
        to = random.randint(1, 99)
        to += to >= frm  # never the same account
        # Large amounts too, so that overdraws (409) happen under contention.
        jobs.append((f"/{policies[i % 3]}/accounts/transfer",
                     json.dumps({"from": frm, "to": to, "amount": random.randint(1, 700)})))
    chunks = [jobs[i::conc] for i in range(conc)]

    def run(chunk):
        c, out = connect(base), []
        for path, body in chunk:
            try:
                st, _, text = request(c, "POST", path, body)
            except (OSError, http.client.HTTPException) as e:
                st, text = 0, repr(e)
                c = connect(base)
            out.append((st, path, body, text))
        return out

    with concurrent.futures.ThreadPoolExecutor(conc) as ex:
        results = [r for rs in ex.map(run, chunks) for r in rs]
    by = {}
    for st, *_ in results:
        by[str(st)] = by.get(str(st), 0) + 1
    bad = [r for r in results if r[0] not in (200, 409)]
    print(json.dumps({"transfers": n, "by_status": by, "errors": len(bad)}))
    if bad:
        die("\n".join(f"{p} {b}: {st} {t}" for st, p, b, t in bad[:20]))


async def ws_connect(hostport, path):
    """A WebSocket to one replica's PROXY-protocol listener, as HAProxy would
    connect: the PROXY v1 line names this client first."""
    import websockets

    host, port = hostport.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=5)
    me = s.getsockname()
    s.sendall(f"PROXY TCP4 {me[0]} {host} {me[1]} {port}\r\n".encode())
    s.setblocking(False)
    return await websockets.connect(f"ws://{hostport}{path}", sock=s, max_size=None, open_timeout=10)


async def chat(member_at, sender_at, n, path, flag):
    member = await ws_connect(member_at, path)
    sender = await ws_connect(sender_at, path)
    tag = f"c{random.randrange(1 << 30)}"
    got, lat = [], []

    async def drain():  # the room echoes to the sender too: read it, or be closed as a slow reader
        async for _ in sender:
            pass

    async def receive():
        async for m in member:
            parts = m.split(" ")
            if len(parts) == 3 and parts[0] == tag:
                got.append(int(parts[1]))
                lat.append((time.monotonic_ns() - int(parts[2])) / 1e6)
                if len(got) == n:
                    return

    recv, dr = asyncio.ensure_future(receive()), asyncio.ensure_future(drain())
    # Subscribed on every replica before the first message: a probe round trip.
    probe_deadline = time.monotonic() + 10
    while time.monotonic() < probe_deadline:
        await sender.send(f"{tag} -1 {time.monotonic_ns()}")
        await asyncio.sleep(0.05)
        if got:
            break
    if not got:
        die(f"the member on {member_at} receives nothing posted on {sender_at} (is fan-out on?)")
    got.clear()
    lat.clear()
    if flag:
        open(flag, "w").close()
    t0 = time.monotonic()
    for i in range(n):
        await sender.send(f"{tag} {i} {time.monotonic_ns()}")
        await asyncio.sleep(0.003)  # about 330 messages a second
    sent_s = time.monotonic() - t0
    try:
        await asyncio.wait_for(recv, 15)
    except asyncio.TimeoutError:
        pass
    dr.cancel()
    await member.close()
    await sender.close()
    lat.sort()
    q = lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))], 2) if lat else None
    in_order = got == list(range(n))
    out = {"sent": n, "received": len(got), "in_order": in_order, "sending_s": round(sent_s, 2),
           "p50_ms": q(0.50), "p99_ms": q(0.99), "max_ms": round(lat[-1], 2) if lat else None}
    print(json.dumps(out))
    if not in_order:
        missing = sorted(set(range(n)) - set(got))
        die(f"received {len(got)} of {n}; missing {missing[:10]}; first out of order at "
            f"{next((i for i, (a, b) in enumerate(zip(got, got[1:])) if b != a + 1), None)}")


# ------------------------------------------------------------ Prometheus
def query(prom, expr, at):
    q = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
    with urllib.request.urlopen(f"{prom}/api/v1/query?{q}", timeout=10) as r:
        doc = json.load(r)
    if doc.get("status") != "success":
        die(f"Prometheus refused {expr}: {doc}")
    return doc["data"]["result"]


def rule_exprs(path):
    import yaml

    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    return {r["record"]: r["expr"] for g in doc["groups"] for r in g["rules"] if "record" in r}


BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, float("inf")]


def bucket(v):
    return next(i for i, b in enumerate(BOUNDS) if v <= b)


def counts(prom, at):
    return {s["metric"]["route"]: float(s["value"][1])
            for s in query(prom, "sum by (route) (weft_requests_total)", at)}


def prom_checks(prom, spec_file):
    """spec: {rules, before, after, at, window_s, routes: {route: {requests,
    seconds, p99_s, p99}}, dashboard}.

    Rates: each route's counter summed over the replicas, its last sample
    before the run against its first after (so no window's edge and no
    extrapolation), over the clients' own duration, against what the
    clients counted. Latency and concurrency: the rules' own expressions,
    their [1m] replaced by a window inside the run, at `at`."""
    with open(spec_file, encoding="utf-8") as f:
        spec = json.load(f)
    at, w = spec["at"], f"[{spec['window_s']}s]"
    rules = {k: v.replace("[1m]", w) for k, v in rule_exprs(spec["rules"]).items()}
    c0, c1 = counts(prom, spec["before"]), counts(prom, spec["after"])
    out, bad = {"routes": {}}, []
    windowed = {s["metric"]["route"]: float(s["value"][1]) for s in query(prom, rules["route:weft_requests:rate1m"], at)}
    p99s = {s["metric"]["route"]: float(s["value"][1])
            for s in query(prom, rules["route:weft_request_duration_seconds:p99_rate1m"], at)}
    for route, want in spec["routes"].items():
        n = c1.get(route, 0) - c0.get(route, 0)
        rate, got_rate = want["requests"] / want["seconds"], n / want["seconds"]
        got_p99 = p99s.get(route)
        out["routes"][route] = {"clients_rate": round(rate, 1), "prom_rate": round(got_rate, 1),
                                "rule_rate_in_window": round(windowed.get(route, 0), 1),
                                "wrk_p99_ms": round(want.get("p99_s", 0) * 1000, 2),
                                "prom_p99_ms": got_p99 and round(got_p99 * 1000, 2)}
        if abs(got_rate - rate) > 0.05 * rate:
            bad.append(f"{route}: Prometheus' rate {got_rate:.1f}/s ({n:.0f} requests) is not within 5 % of the "
                       f"clients' {rate:.1f}/s ({want['requests']} requests)")
        if want.get("p99", True):
            if got_p99 is None or abs(bucket(got_p99) - bucket(want["p99_s"])) > 1:
                bad.append(f"{route}: histogram_quantile's p99 {got_p99} s is not within one bucket of wrk's "
                           f"{want['p99_s']} s (buckets {BOUNDS})")
    gauge = query(prom, rules["job:weft_inflight_requests:avg1m"], at)
    little = query(prom, rules["job:weft_request_concurrency:rate1m"], at)
    g = float(gauge[0]["value"][1]) if gauge else None
    l = float(little[0]["value"][1]) if little else None
    sampled = query(prom, f"sum(avg_over_time(weft_inflight_requests{w}))", at)
    out["inflight"], out["littles_law"] = g and round(g, 3), l and round(l, 3)
    out["inflight_gauge_sampled"] = round(float(sampled[0]["value"][1]), 3) if sampled else None
    if g is None or l is None or abs(g - l) > 0.2 * l:
        bad.append(f"in flight: {g} on average (weft_inflight_requests_seconds_total), Little's law "
                   f"(rate x mean latency) says {l}: not within 20 %")
    if spec.get("dashboard"):
        out["dashboard_queries"] = dashboard(prom, spec["dashboard"], at, w, bad)
    print(json.dumps(out))
    if bad:
        die("\n".join(bad))


def dashboard(prom, path, at, window, bad):
    """Every panel's query, summed over `instance` as the dashboard does, with
    its variables at "All": each must answer with data from these replicas."""
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    n = 0
    for p in d["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"].replace("$__rate_interval", window[1:-1])
            for var in ("job", "instance", "route"):
                expr = expr.replace(f"${var}", ".*")
            n += 1
            if not query(prom, expr, at):
                bad.append(f"dashboard panel '{p.get('title')}': no data for {expr}")
    return n


def main(argv):
    if len(argv) < 2:
        die(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "persons" and len(args) == 1:
        persons(args[0])
    elif cmd == "transfers" and len(args) == 3:
        transfers(args[0], int(args[1]), int(args[2]))
    elif cmd == "chat" and len(args) in (4, 5):
        asyncio.run(chat(args[0], args[1], int(args[2]), args[3], args[4] if len(args) == 5 else None))
    elif cmd == "prom" and len(args) == 2:
        prom_checks(args[0], args[1])
    else:
        die(__doc__)


if __name__ == "__main__":
    main(sys.argv)
