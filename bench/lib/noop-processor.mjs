// The sandboxed processor of the sandbox suite, for every library: does nothing, so the
// numbers are the cost of the queue plus one round trip to the child per job.
export default async function noop() {}
