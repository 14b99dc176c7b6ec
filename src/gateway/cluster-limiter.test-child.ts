/**
 * The worker side of cluster-limiter.test.ts, in a real child process with a real IPC channel:
 * on {consume: [[name, key], ...]} it issues every consume in one turn and reports the outcomes.
 */
import { ClusterLimitClient, type LimitName } from "./cluster-limiter.js";

const client = new ClusterLimitClient(Number(process.env.LIMIT_TIMEOUT_MS ?? 2_000));
process.on("message", (msg: { consume?: [LimitName, string][] }) => {
  if (!msg.consume) return;
  const all = msg.consume.map(([name, key]) =>
    client.consume(name, key).then(
      (o) => ({ allowed: o.allowed, remaining: o.remainingPoints, msBeforeNext: o.msBeforeNext }),
      (err: Error) => ({ error: err.message }),
    ),
  );
  void Promise.all(all).then((results) => process.send!({ results }));
});
process.send!({ ready: true });
