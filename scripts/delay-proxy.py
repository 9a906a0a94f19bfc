#!/usr/bin/env python3
"""A TCP proxy that delays every chunk by DELAY_MS each way: a network hop's latency on loopback,
for measuring what a round trip to a remote PostgreSQL costs a call (docs/BENCHMARKS.md).

usage: delay-proxy.py LISTEN_PORT TARGET_PORT DELAY_MS   (both on 127.0.0.1)
"""
import asyncio, sys, time
DELAY = float(sys.argv[3]) / 1000
async def pump(r, w):
    q = asyncio.Queue()
    async def writer():
        while True:
            t, data = await q.get()
            if data is None:
                w.close(); return
            d = t + DELAY - time.monotonic()
            if d > 0:
                await asyncio.sleep(d)
            w.write(data); await w.drain()
    task = asyncio.create_task(writer())
    while True:
        data = await r.read(65536)
        q.put_nowait((time.monotonic(), data or None))
        if not data:
            break
    await task
async def handle(cr, cw):
    sr, sw = await asyncio.open_connection('127.0.0.1', int(sys.argv[2]))
    await asyncio.gather(pump(cr, sw), pump(sr, cw), return_exceptions=True)
async def main():
    s = await asyncio.start_server(handle, '127.0.0.1', int(sys.argv[1]))
    async with s: await s.serve_forever()
asyncio.run(main())
