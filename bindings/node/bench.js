// Benchmark: a 4 KiB read through the npm package vs through the Rust library, in the same
// process and the same run (the Rust side loops inside the addon, with no JavaScript in
// between). The ratio is the cost of the binding; the goal is <= 1.3x.
//
//   node bindings/node/bench.js [--n 20000] [--samples 5] [--json]
//
// `sequential` awaits each read before the next (a call's latency through the event loop and a
// blocking thread); `pipelined` keeps 16 reads in flight on 16 sessions (what a server
// answering many agents does) and reports the time per read.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Sandbox } from "./index.js";

const { values } = parseArgs({
  options: {
    n: { type: "string", default: "20000" },
    samples: { type: "string", default: "5" },
    json: { type: "boolean", default: false },
  },
});
const n = Number(values.n);
const samples = Number(values.samples);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const dir = mkdtempSync(path.join(tmpdir(), "burrow-bench-"));
try {
  const sb = new Sandbox(path.join(dir, "bench.db"));
  const s = await sb.create("bench");
  const file = "data/file.txt";
  await s.write(file, Buffer.alloc(4096, "x"));
  const lanes = await s.fork(16);
  for (let i = 0; i < 1000; i++) await s.readBytes(file); // warm: page cache, statement cache

  const seq = [];
  const piped = [];
  const rust = [];
  for (let k = 0; k < samples; k++) {
    let t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await s.readBytes(file);
    seq.push(Number(process.hrtime.bigint() - t) / 1e3 / n);

    t = process.hrtime.bigint();
    await Promise.all(
      lanes.map(async (lane) => {
        for (let i = 0; i < n / lanes.length; i++) await lane.readBytes(file);
      }),
    );
    piped.push(Number(process.hrtime.bigint() - t) / 1e3 / n);

    rust.push(((await sb._benchRead(s.id, file, n)) * 1e6) / n);
  }
  const r = { name: "node.read_4k", node_us: median(seq), node_pipelined_us: median(piped), rust_us: median(rust) };
  r.ratio = r.node_us / r.rust_us;
  r.ratio_pipelined = r.node_pipelined_us / r.rust_us;
  for (const k of Object.keys(r)) if (typeof r[k] === "number") r[k] = Math.round(r[k] * 1000) / 1000;
  if (values.json) console.log(JSON.stringify(r));
  else {
    console.log(
      `read 4 KiB: node ${r.node_us} us (pipelined ${r.node_pipelined_us} us), rust ${r.rust_us} us, ` +
        `ratio ${r.ratio}x (pipelined ${r.ratio_pipelined}x; goal <= 1.3x)`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
