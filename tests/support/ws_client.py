#!/usr/bin/python3
"""WebSocket test client for the chat plugin (Debian's python3-websockets).

  ws_client.py broadcast URL N M [S]  N clients, each (or the first S) sends
                                   M messages; every client must receive
                                   them all: prints "ok RECEIVED" or
                                   "lost MISSING"
  ws_client.py close URL CODE      asks the server to close with CODE; prints
                                   "closed CODE" with the code it got
  ws_client.py ping URL            a ping must come back as a pong: "pong"
  ws_client.py big URL SIZE        sends one SIZE-byte message; prints
                                   "closed CODE" or "echoed"
  ws_client.py idle URL            sends nothing; prints "closed CODE"
  ws_client.py relay URL_A URL_B N  a client on A and one on B (another
                                   process of the same room, fanout =
                                   "postgres"); B sends N messages, A must
                                   receive them in B's order: prints
                                   "ok N in order", "out of order ..." or
                                   "lost MISSING"
  ws_client.py hold URL N [S]      N clients stay connected; prints "ready",
                                   then per stdin line: "send" -> one
                                   broadcast round, one message from each
                                   client (or the first S), every client
                                   counting what it gets ("ok"/"lost"),
                                   "quit" -> closes them all ("bye"), "wait" ->
                                   waits for every close, prints
                                   "closed CODE:COUNT ..."
"""
import asyncio
import collections
import resource
import sys

import websockets


async def connect(url, n):
    clients = await asyncio.gather(*[websockets.connect(url, max_size=None, ping_interval=None,
                                                        open_timeout=60) for _ in range(n)])
    # The room knows a client once its handler has joined: wait for all, on
    # the server's own count (the sleep is the poll interval; 60 s bound).
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        await clients[0].send("/who")
        while True:
            msg = await asyncio.wait_for(clients[0].recv(), 30)
            if msg.startswith("who "):
                break
        if int(msg[4:]) >= n:
            return clients
        if asyncio.get_running_loop().time() > deadline:
            raise SystemExit("only %s of %d clients joined the room within 60 s" % (msg[4:], n))
        await asyncio.sleep(0.05)


async def round_trip(clients, m, tag, senders=None):
    n = len(clients) if senders is None else senders
    expected = {"%s-%d-%d" % (tag, i, k) for i in range(n) for k in range(m)}

    async def reader(c):
        got = set()
        try:
            while len(got) < len(expected):
                msg = await asyncio.wait_for(c.recv(), 60)
                if msg in expected:
                    got.add(msg)
        except Exception:
            pass
        return got

    readers = [asyncio.ensure_future(reader(c)) for c in clients]
    for k in range(m):
        await asyncio.gather(*[c.send("%s-%d-%d" % (tag, i, k)) for i, c in enumerate(clients[:n])])
    results = await asyncio.gather(*readers)
    missing = sum(len(expected) - len(g) for g in results)
    return "ok %d" % sum(len(g) for g in results) if missing == 0 else "lost %d" % missing


async def relay(url_a, url_b, n):
    a = (await connect(url_a, 1))[0]
    b = (await connect(url_b, 1))[0]
    want = ["r-%d" % k for k in range(n)]
    got = []

    async def reader():
        try:
            while len(got) < n:
                msg = await asyncio.wait_for(a.recv(), 60)
                if msg.startswith("r-"):
                    got.append(msg)
        except Exception:
            pass

    task = asyncio.ensure_future(reader())
    for m in want:
        await b.send(m)
    await task
    await asyncio.gather(a.close(), b.close())
    if got == want:
        return "ok %d in order" % n
    if len(got) < n:
        return "lost %d" % (n - len(got))
    first = next(i for i in range(n) if got[i] != want[i])
    return "out of order at %d: %s" % (first, got[first])


async def main():
    # A thousand clients need more descriptors than a default soft limit.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536 if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "broadcast":
        clients = await connect(url, int(sys.argv[3]))
        senders = int(sys.argv[5]) if len(sys.argv) > 5 else None
        print(await round_trip(clients, int(sys.argv[4]), "b", senders), flush=True)
        await asyncio.gather(*[c.close() for c in clients])
    elif mode == "relay":
        print(await relay(url, sys.argv[3], int(sys.argv[4])), flush=True)
    elif mode == "close":
        c = await websockets.connect(url, ping_interval=None)
        await c.send("/close " + sys.argv[3])
        try:
            while True:
                await c.recv()
        except websockets.ConnectionClosed as e:
            print("closed %d" % e.rcvd.code if e.rcvd else "closed none", flush=True)
    elif mode == "ping":
        c = await websockets.connect(url, ping_interval=None)
        await asyncio.wait_for(await c.ping(b"hi"), 10)
        print("pong", flush=True)
        await c.close()
    elif mode in ("big", "idle"):
        c = await websockets.connect(url, ping_interval=None, max_size=None)
        if mode == "big":
            await c.send("x" * int(sys.argv[3]))
        try:
            while True:
                await asyncio.wait_for(c.recv(), 30)
                if mode == "big":
                    print("echoed", flush=True)
                    await c.close()
                    return
        except websockets.ConnectionClosed as e:
            print("closed %d" % e.rcvd.code if e.rcvd else "closed none", flush=True)
    elif mode == "hold":
        clients = await connect(url, int(sys.argv[3]))
        senders = int(sys.argv[4]) if len(sys.argv) > 4 else None
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        rounds = 0
        while True:
            line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
            if line == "send":
                rounds += 1
                print(await round_trip(clients, 1, "h%d" % rounds, senders), flush=True)
            elif line == "quit":
                await asyncio.gather(*[c.close() for c in clients])
                print("bye", flush=True)
                return
            elif line == "wait" or line == "":
                codes = collections.Counter()
                for c in clients:
                    try:
                        while True:
                            await asyncio.wait_for(c.recv(), 30)
                    except websockets.ConnectionClosed as e:
                        codes[e.rcvd.code if e.rcvd else 0] += 1
                    except asyncio.TimeoutError:
                        codes[-1] += 1
                print("closed " + " ".join("%d:%d" % kv for kv in sorted(codes.items())), flush=True)
                return


asyncio.run(main())
