// The filesystem half: files and directory watching through the SDK's
// public API only (sbx.files), in a scratch directory of its own.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { FileNotFoundError, FileType, FilesystemEventType } from 'e2b'

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const dir = `/tmp/tend-e2b-fs-${randomBytes(6).toString('hex')}`

// Until fn() is true, or fail after ms.
async function until(fn, ms, what) {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

// The error fn throws (it must throw).
async function thrown(fn) {
  try {
    await fn()
  } catch (err) {
    return err
  }
  throw new Error('no error thrown')
}

export const checks = [
  {
    name: 'files.makeDir twice',
    fn: async (sbx) => {
      assert.equal(await sbx.files.makeDir(dir), true)
      assert.equal(await sbx.files.makeDir(dir), false)
    },
  },
  {
    name: 'files.write string + read',
    fn: async (sbx) => {
      const info = await sbx.files.write(`${dir}/s.txt`, 'hello, tend\n')
      assert.equal(info.path, `${dir}/s.txt`)
      assert.equal(info.name, 's.txt')
      assert.equal(await sbx.files.read(`${dir}/s.txt`), 'hello, tend\n')
    },
  },
  {
    name: 'files.write bytes + read bytes',
    fn: async (sbx) => {
      const data = new Uint8Array(randomBytes(70000))
      await sbx.files.write(`${dir}/deep/er/b.bin`, data.buffer)
      const back = await sbx.files.read(`${dir}/deep/er/b.bin`, { format: 'bytes' })
      assert.deepEqual(Buffer.from(back), Buffer.from(data))
    },
  },
  {
    name: 'files.write useOctetStream',
    fn: async (sbx) => {
      await sbx.files.write(`${dir}/o.txt`, 'octets', { useOctetStream: true })
      assert.equal(await sbx.files.read(`${dir}/o.txt`), 'octets')
    },
  },
  {
    name: 'files.exists',
    fn: async (sbx) => {
      assert.equal(await sbx.files.exists(`${dir}/s.txt`), true)
      assert.equal(await sbx.files.exists(`${dir}/nope`), false)
    },
  },
  {
    name: 'files.getInfo',
    fn: async (sbx) => {
      const e = await sbx.files.getInfo(`${dir}/s.txt`)
      assert.equal(e.type, FileType.FILE)
      assert.equal(e.name, 's.txt')
      assert.equal(e.path, `${dir}/s.txt`)
      assert.equal(e.size, 12)
      assert.equal(e.permissions, '-rw-r--r--')
      assert.equal(e.mode, 0o644)
      assert.equal(e.owner, 'root')
      assert.ok(e.modifiedTime instanceof Date && Math.abs(e.modifiedTime - Date.now()) < 600000)
      const d = await sbx.files.getInfo(dir)
      assert.equal(d.type, FileType.DIR)
    },
  },
  {
    name: 'files.list with depth',
    fn: async (sbx) => {
      const one = (await sbx.files.list(dir)).map((e) => e.name).sort()
      assert.deepEqual(one, ['deep', 'o.txt', 's.txt'])
      const three = (await sbx.files.list(dir, { depth: 3 })).map((e) => e.path.slice(dir.length + 1))
      assert.deepEqual(three.sort(), ['deep', 'deep/er', 'deep/er/b.bin', 'o.txt', 's.txt'])
    },
  },
  {
    name: 'files.write gzip + read gzip',
    fn: async (sbx) => {
      // The SDK sends a CompressionStream("gzip") body (octet-stream,
      // chunked, Content-Encoding: gzip); reads ask Accept-Encoding: gzip
      // and take the plain reply.
      const data = new Uint8Array(randomBytes(3 << 20))
      data.fill(7, 1 << 20, 2 << 20)
      const info = await sbx.files.write(`${dir}/gz/b.bin`, data.buffer, { gzip: true })
      assert.equal(info.path, `${dir}/gz/b.bin`)
      const back = await sbx.files.read(`${dir}/gz/b.bin`, { format: 'bytes', gzip: true })
      assert.deepEqual(Buffer.from(back), Buffer.from(data))
      await sbx.files.write(`${dir}/gz/s.txt`, 'zipped text\n'.repeat(1000), { gzip: true })
      assert.equal(await sbx.files.read(`${dir}/gz/s.txt`, { gzip: true }), 'zipped text\n'.repeat(1000))
      const many = await sbx.files.write([
        { path: `${dir}/gz/m1`, data: 'one' },
        { path: `${dir}/gz/m2`, data: '' },
      ], { gzip: true })
      assert.deepEqual(many.map((e) => e.name), ['m1', 'm2'])
      assert.equal(await sbx.files.read(`${dir}/gz/m1`), 'one')
      assert.equal(await sbx.files.read(`${dir}/gz/m2`, { gzip: true }), '')
      const s = await sbx.files.read(`${dir}/gz/s.txt`, { format: 'stream', gzip: true })
      let n = 0
      for await (const chunk of s) n += chunk.length
      assert.equal(n, 12000)
    },
  },
  {
    name: 'files.rename',
    fn: async (sbx) => {
      const e = await sbx.files.rename(`${dir}/o.txt`, `${dir}/moved/o2.txt`)
      assert.equal(e.path, `${dir}/moved/o2.txt`)
      assert.equal(await sbx.files.exists(`${dir}/o.txt`), false)
      assert.equal(await sbx.files.read(`${dir}/moved/o2.txt`), 'octets')
    },
  },
  {
    name: 'files missing -> FileNotFoundError',
    fn: async (sbx) => {
      assert.ok(await thrown(() => sbx.files.read(`${dir}/nope`)) instanceof FileNotFoundError)
      assert.ok(await thrown(() => sbx.files.getInfo(`${dir}/nope`)) instanceof FileNotFoundError)
      assert.ok(await thrown(() => sbx.files.list(`${dir}/nope`)) instanceof FileNotFoundError)
    },
  },
  {
    name: 'files.watchDir sees create and write',
    fn: async (sbx) => {
      await sbx.files.makeDir(`${dir}/w`)
      const seen = []
      const h = await sbx.files.watchDir(`${dir}/w`, (ev) => seen.push(ev))
      try {
        await sbx.files.write(`${dir}/w/f.txt`, 'one')
        await sbx.files.write(`${dir}/w/f.txt`, 'two')
        const has = (t) => seen.some((e) => e.name === 'f.txt' && e.type === t)
        await until(() => has(FilesystemEventType.CREATE) && has(FilesystemEventType.WRITE),
          5000, 'create and write of f.txt')
        // tend's atomic writes: never the temp file's events, nor a rename.
        assert.deepEqual(seen.filter((e) => e.name !== 'f.txt'), [])
        assert.equal(seen.some((e) => e.type === FilesystemEventType.RENAME), false)
      } finally {
        await h.stop()
      }
    },
  },
  {
    name: 'files.write metadata -> getInfo, list, rename',
    fn: async (sbx) => {
      // X-Metadata-<key> headers, stored as user.e2b.<key> xattrs.
      const metadata = { author: 'mish', purpose: 'upload' }
      const info = await sbx.files.write(`${dir}/meta/a.txt`, 'with metadata', { metadata })
      assert.deepEqual(info.metadata, metadata)
      assert.deepEqual((await sbx.files.getInfo(`${dir}/meta/a.txt`)).metadata, metadata)
      const o = await sbx.files.write(`${dir}/meta/o.txt`, 'octets', { metadata: { k: 'v' }, useOctetStream: true })
      assert.deepEqual(o.metadata, { k: 'v' })
      const many = await sbx.files.writeFiles([
        { path: `${dir}/meta/m1`, data: 'one' },
        { path: `${dir}/meta/m2`, data: 'two' },
      ], { metadata: { source: 'suite' } })
      assert.deepEqual(many.map((e) => e.metadata), [{ source: 'suite' }, { source: 'suite' }])
      const listed = await sbx.files.list(`${dir}/meta`)
      assert.deepEqual(listed.find((e) => e.name === 'a.txt').metadata, metadata)
      assert.deepEqual(listed.find((e) => e.name === 'm2').metadata, { source: 'suite' })
      const moved = await sbx.files.rename(`${dir}/meta/a.txt`, `${dir}/meta/b.txt`)
      assert.deepEqual(moved.metadata, metadata)
      // An upload replaces the file's metadata: none clears it.
      const again = await sbx.files.write(`${dir}/meta/b.txt`, 'no metadata')
      assert.equal(again.metadata, undefined)
      assert.equal((await sbx.files.getInfo(`${dir}/meta/b.txt`)).metadata, undefined)
      // Set by someone else (setfattr's xattr, here through a command).
      const r = await sbx.commands.run(`python3 -c "import os; os.setxattr('${dir}/meta/o.txt', 'user.e2b.author', b'shell')"`)
      assert.equal(r.exitCode, 0)
      assert.deepEqual((await sbx.files.getInfo(`${dir}/meta/o.txt`)).metadata, { k: 'v', author: 'shell' })
    },
  },
  {
    name: 'files.watchDir recursive sees a write after a nested folder addition',
    fn: async (sbx) => {
      // The SDK's own test: the folder's create, then the file's write.
      const top = `${dir}/wr`
      await sbx.files.makeDir(top)
      const seen = []
      const h = await sbx.files.watchDir(top, (ev) => seen.push(ev), { recursive: true })
      try {
        const has = (t, n) => seen.some((e) => e.name === n && e.type === t)
        await sbx.files.makeDir(`${top}/nested`)
        await until(() => has(FilesystemEventType.CREATE, 'nested'), 5000, 'create of nested')
        await sbx.files.write(`${top}/nested/f.txt`, 'content')
        await until(() => has(FilesystemEventType.WRITE, 'nested/f.txt'), 5000, 'write of nested/f.txt')
        assert.ok(has(FilesystemEventType.CREATE, 'nested/f.txt'))
        assert.equal(seen.some((e) => e.type === FilesystemEventType.RENAME), false)
      } finally {
        await h.stop()
      }
    },
  },
  {
    name: 'files.remove',
    fn: async (sbx) => {
      await sbx.files.remove(dir)
      assert.equal(await sbx.files.exists(dir), false)
    },
  },
]
