// `run.py --bench`: commands.run('true') through the SDK, p50 and p90 of
// N calls after a warm-up, as one JSON line (run.py compares it with
// /v1/exec over the socket, measured in the same run).
import { Sandbox } from 'e2b'

const n = Number(process.env.E2B_BENCH_N || 100)
const sbx = await Sandbox.create()
const ms = []
for (let i = 0; i < n + 5; i++) {
  const t0 = process.hrtime.bigint()
  await sbx.commands.run('true')
  if (i >= 5) ms.push(Number(process.hrtime.bigint() - t0) / 1e6)
}
ms.sort((a, b) => a - b)
console.log(JSON.stringify({ n, p50: ms[Math.floor(n / 2)], p90: ms[Math.floor(n * 0.9)] }))
