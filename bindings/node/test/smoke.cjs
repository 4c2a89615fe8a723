'use strict';
// The installed package's quick check, with nothing but the package (no SDK,
// no Rust toolchain): static keys seal and open, a tampered token is refused,
// a bad option is refused by name; given the JSON file smoke.py wrote, the
// keyset it created opens here and so does the token Python sealed.
//
//   node smoke.cjs [SMOKE_JSON]
const assert = require('node:assert/strict');
const fs = require('node:fs');
// The installed package, or (STATESEAL_PACKAGE) a directory holding one, as the release workflow runs it.
const { KeysetCodec, createStatesealCodec } = require(process.env.STATESEAL_PACKAGE || 'stateseal');

async function main() {
  const statics = KeysetCodec.fromKeys([Buffer.alloc(32, 7)]);
  const token = statics.seal('step-2');
  assert.ok(token.startsWith('v1.'), token);
  assert.equal(statics.unseal(token).toString(), 'step-2');
  const tampered = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
  assert.throws(() => statics.unseal(tampered), (e) => !String(e.message).includes(tampered));
  assert.throws(() => createStatesealCodec({ codec: statics, audiance: 'x' }), /audiance/);
  const shared = process.argv[2];
  if (shared) {
    const { store, token: fromPython } = JSON.parse(fs.readFileSync(shared, 'utf8'));
    const codec = await KeysetCodec.start(store, { allowLocalKek: true });
    assert.equal(codec.unseal(fromPython).toString(), 'step-2', 'the token Python sealed');
    assert.equal(codec.unseal(codec.seal('from-node')).toString(), 'from-node');
    codec.close();
  }
  console.log(`stateseal from ${require.resolve(process.env.STATESEAL_PACKAGE || 'stateseal')}: ok`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
