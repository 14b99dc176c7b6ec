/**
 * The worker side of src/gateway/cluster-limiter.test.ts, in a real child process with a real IPC channel:
 * on {consume: [[name, key], ...]} it issues every consume in one turn and reports the outcomes.
 * Plain JavaScript, since a child process does not load TypeScript: it imports the compiled
 * cluster-limiter module named by CLUSTER_LIMITER_MODULE (dist/, built by `npm test`).
 */
const { ClusterLimitClient } = await import(process.env.CLUSTER_LIMITER_MODULE);

const client = new ClusterLimitClient(Number(process.env.LIMIT_TIMEOUT_MS ?? 2_000));
process.on("message", (msg) => {
  if (!msg.consume) return;
  const all = msg.consume.map(([name, key]) =>
    client.consume(name, key).then(
      (o) => ({ allowed: o.allowed, remaining: o.remainingPoints, msBeforeNext: o.msBeforeNext }),
      (err) => ({ error: err.message }),
    ),
  );
  void Promise.all(all).then((results) => process.send({ results }));
});
process.send({ ready: true });
