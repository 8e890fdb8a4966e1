// The failure converter of a worker with HARNESS_ENCRYPTION_KEYS: error messages and stack traces go
// into an encoded payload, which the payload codec then encrypts, so an activity error that quotes
// model output (`not JSON: …`) is not stored in the clear. Temporal loads a worker's failure
// converter by path (require() for activities, the bundler for workflows), hence plain CommonJS
// here rather than TypeScript: it must load the same way under tsx, vitest and `node dist/`.
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
