'use strict';
// The native module: the binary of this platform's package
// (`stateseal-<platform>`, installed by npm as an optional dependency), or one
// built from the repository (`stateseal.node` beside this file: contributors'
// `npm install ./bindings/node`, which runs scripts/build-native.cjs).
module.exports = require('./platforms.cjs').load(__dirname);
