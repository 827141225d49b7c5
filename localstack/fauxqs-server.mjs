// fauxqs-server.mjs starts the fauxqs emulator (SQS, SNS and S3 on one port) bound to 127.0.0.1 only.
//
// fauxqs's own CLI listens on every interface and logs each request; this
// launcher uses its buildApp API instead so the emulator is reachable from
// this machine alone and stays quiet.
//
// Environment: SQSWORKER_SQS_PORT (default 9324).
import { buildApp } from "fauxqs";

const port = Number.parseInt(process.env.SQSWORKER_SQS_PORT ?? "9324", 10);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error(`fauxqs-server: SQSWORKER_SQS_PORT must be a TCP port, got ${process.env.SQSWORKER_SQS_PORT}`);
  process.exit(2);
}

const app = buildApp({ logger: false, defaultRegion: process.env.AWS_REGION || "us-east-1" });

let closing = false;
async function shutdown(signal) {
  if (closing) return;
  closing = true;
  try {
    await app.close();
  } finally {
    console.error(`fauxqs-server: stopped (${signal})`);
    process.exit(0);
  }
}
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));

try {
  const address = await app.listen({ port, host: "127.0.0.1" });
  console.error(`fauxqs-server: listening on ${address}`);
} catch (err) {
  console.error(`fauxqs-server: cannot listen on 127.0.0.1:${port}: ${err.message}`);
  process.exit(1);
}
