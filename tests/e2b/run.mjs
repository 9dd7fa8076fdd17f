// The E2B JS SDK, unmodified, against a tend agent behind `tend shim
// --no-auth` (tests/e2b/run.py starts both).  The SDK's debug mode
// (E2B_DEBUG=true) needs no E2B account: E2B_SANDBOX_URL is its envd.
//
// Checks are lists of {name, fn(sbx)} exported as `checks` by the files
// below; a file that is not there is skipped (fs.mjs belongs to the
// filesystem half).  A check that cannot run here throws a Skip, with
// why.  One line per check, then "N passed, N failed".
import { existsSync } from 'node:fs'
import { Sandbox } from 'e2b'
import { Skip } from './check.mjs'

const files = ['./process.mjs', './fs.mjs']
const perCheckMs = 30000

async function withTimeout(p, ms, name) {
  let timer
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name}: no answer in ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([p, t])
  } finally {
    clearTimeout(timer)
  }
}

const sbx = await Sandbox.create()
let passed = 0
let failed = 0
let skipped = 0
for (const f of files) {
  if (!existsSync(new URL(f, import.meta.url))) continue
  const { checks } = await import(f)
  for (const c of checks) {
    const t0 = Date.now()
    try {
      await withTimeout(c.fn(sbx), perCheckMs, c.name)
      passed++
      console.log(`ok   ${c.name} (${Date.now() - t0} ms)`)
    } catch (err) {
      if (err instanceof Skip) {
        skipped++
        console.log(`skip ${c.name}: ${err.message}`)
        continue
      }
      failed++
      console.log(`FAIL ${c.name}: ${err && err.stack ? err.stack : err}`)
    }
  }
}
console.log(`${passed} passed, ${failed} failed` +
  (skipped ? `, ${skipped} skipped` : ''))
process.exit(failed === 0 && passed > 0 ? 0 : 1)
