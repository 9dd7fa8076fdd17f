// A 100 MB files.write + files.read through the SDK (multipart upload,
// GET /files), against cat(1) copying and reading the same bytes on the
// same disk, as one JSON line.  Run it like bench.mjs, with
// E2B_SANDBOX_URL at a shim; E2B_BENCH_DIR is the scratch directory.
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { Sandbox } from 'e2b'

const size = 100 * 1024 * 1024
const dir = mkdtempSync(`${process.env.E2B_BENCH_DIR || '/var/tmp'}/tend-bench-fs-`)
const data = randomBytes(size)
const sbx = await Sandbox.create({ requestTimeoutMs: 600000 })
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6

try {
  let t0 = process.hrtime.bigint()
  await sbx.files.write(`${dir}/sdk.bin`, data)
  const write = ms(t0)
  t0 = process.hrtime.bigint()
  const back = await sbx.files.read(`${dir}/sdk.bin`, { format: 'bytes' })
  const read = ms(t0)
  if (Buffer.compare(Buffer.from(back), data) !== 0) throw new Error('read back differs')
  writeFileSync(`${dir}/src.bin`, data)
  t0 = process.hrtime.bigint()
  execFileSync('sh', ['-c', `cat "${dir}/src.bin" > "${dir}/cat.bin" && sync "${dir}/cat.bin"`])
  const catWrite = ms(t0)
  t0 = process.hrtime.bigint()
  execFileSync('sh', ['-c', `cat "${dir}/cat.bin" > /dev/null`])
  const catRead = ms(t0)
  console.log(JSON.stringify({ mb: size >> 20, write, read, catWrite, catRead }))
} finally {
  rmSync(dir, { recursive: true, force: true })
}
