// fauxqs-server.mjs starts the fauxqs emulator (SQS, SNS and S3 on one port) bound to 127.0.0.1 only.
//
// fauxqs's own CLI listens on every interface and logs each request; this
// launcher uses its buildApp API instead so the emulator is reachable from
// this machine alone and stays quiet.
//
// It also corrects one fauxqs 1.9.2 behaviour that real SQS does not have:
// a ReceiveMessage long poll whose client went away (a worker cancelling its
// polls when it stops) stayed registered until its wait ended and then took
// the next messages sent, which stayed invisible for their visibility
// timeout with nobody holding them. Here an abandoned long poll ends as
// soon as its connection closes and takes no message (see
// abandonedPollsTakeNothing). The conformance suite checks this behaviour
// (AbortedLongPollTakesNoLaterMessage) on every run.
//
// Environment: SQSWORKER_SQS_PORT (default 9324).
import { AsyncLocalStorage } from "node:async_hooks";
import { buildApp } from "fauxqs";
// fauxqs exports only buildApp; its queue class is reached by file. The
// package is pinned (package-lock.json), and the shape is checked below.
import { SqsQueue } from "./node_modules/fauxqs/dist/sqs/sqsStore.js";

const port = Number.parseInt(process.env.SQSWORKER_SQS_PORT ?? "9324", 10);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error(`fauxqs-server: SQSWORKER_SQS_PORT must be a TCP port, got ${process.env.SQSWORKER_SQS_PORT}`);
  process.exit(2);
}

const app = buildApp({ logger: false, defaultRegion: process.env.AWS_REGION || "us-east-1" });
// Keep idle connections open longer than clients keep them idle (Go's HTTP
// client: 90 s). With Fastify's default (72 s) the server can close a
// connection just as a client sends its next request on it; the request
// then fails in flight, and a client that retries it may repeat a receive
// that had taken effect, hiding its messages until their visibility ends.
app.server.keepAliveTimeout = 120_000;
app.server.headersTimeout = 121_000;
abandonedPollsTakeNothing(app);

// abandonedPollsTakeNothing makes a ReceiveMessage whose client
// disconnected before the answer stop waiting at once and dequeue nothing.
//
// fauxqs's ReceiveMessage dequeues, and when the queue is empty awaits
// queue.waitForMessages (a waiter that any send wakes) and dequeues again; it
// never looks at the connection. Each request here carries its own state in
// an AsyncLocalStorage, set when the response's connection closes before the
// response was written; the queue's waitForMessages and dequeue consult it.
function abandonedPollsTakeNothing(app) {
  const methods = ["waitForMessages", "dequeue", "stopPollTimerIfEmpty"];
  if (methods.some((m) => typeof SqsQueue.prototype[m] !== "function") || !Array.isArray(new SqsQueue("probe", "probe", "probe", {}, {}).pollWaiters)) {
    throw new Error(`fauxqs-server: fauxqs's SqsQueue lacks ${methods.join(", ")} or pollWaiters; this launcher targets fauxqs 1.9.2 (localstack/package-lock.json)`);
  }
  const current = new AsyncLocalStorage();
  app.addHook("onRequest", (request, reply, done) => {
    const state = { abandoned: false, onAbandon: null };
    reply.raw.on("close", () => {
      if (reply.raw.writableFinished) return;
      state.abandoned = true;
      state.onAbandon?.();
    });
    request.sqsworkerPoll = state;
    done();
  });
  // preHandler runs after the body is parsed, right before the handler, so
  // the handler and everything it awaits run inside this request's state.
  app.addHook("preHandler", (request, _reply, done) => {
    current.run(request.sqsworkerPoll, done);
  });

  const settleMillis = 20;
  const wait = SqsQueue.prototype.waitForMessages;
  SqsQueue.prototype.waitForMessages = function (waitTimeSeconds) {
    const state = current.getStore();
    const waiting = wait.call(this, waitTimeSeconds);
    if (!state) return waiting;
    const waiter = this.pollWaiters[this.pollWaiters.length - 1];
    const cancel = () => {
      const i = this.pollWaiters.indexOf(waiter);
      if (i >= 0) {
        this.pollWaiters.splice(i, 1);
        clearTimeout(waiter.timer);
        this.stopPollTimerIfEmpty();
      }
    };
    if (state.abandoned) {
      cancel();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      state.onAbandon = () => {
        cancel();
        resolve();
      };
      // A client that gives up closes its connection and may send its
      // next request (say a SendMessage) on another one at once; the
      // server can read that request before it notices the close. So a
      // woken poll waits a moment before it dequeues, long enough for the
      // close of its own connection to arrive first.
      waiting.then(() => setTimeout(resolve, settleMillis));
    });
  };

  const dequeue = SqsQueue.prototype.dequeue;
  SqsQueue.prototype.dequeue = function (...args) {
    if (current.getStore()?.abandoned) return [];
    return dequeue.apply(this, args);
  };
}

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
