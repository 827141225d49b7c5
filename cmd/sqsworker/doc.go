// Command sqsworker is the operator's tool for queues run by the sqsworker
// library: it creates queue pairs, checks their dead-letter setup, inspects
// and redrives dead-letter queues, previews retry schedules, pauses and
// resumes queues for their whole fleet of workers (creating the fleet
// table they share), shows a queue's state with its fleet controls, and
// reconciles EventBridge Scheduler schedules with a declared set.
//
// Usage:
//
//	sqsworker <command> [flags] [arguments]
//
// Every command takes --help. Flags may come before or after the
// arguments; the AWS connection flags (--region, --profile, --endpoint-url)
// may also come before the command: sqsworker --region us-east-1 dlq ls.
// Commands that print data take -o json for scripts (camelCase keys).
//
// # Commands
//
//	setup NAME            create what is missing of queue NAME, NAME-dlq and the
//	                      RedrivePolicy; change only what a flag asks for and
//	                      print what changed ("no changes" the second time);
//	                      lowering maxReceiveCount or a retention needs --force;
//	                      the DLQ keeps messages 14 days. With --topic TOPIC, the
//	                      SNS fan-out chain too: topic, subscription (--raw,
//	                      --filter-policy), the subscription's DLQ
//	                      NAME-fanout-dlq and the queue policies; a queue
//	                      policy open to everyone is reported, not removed.
//	                      Names, ranges and the filter policy's shape are
//	                      checked before any call
//	doctor QUEUE...       check each queue's dead-letter setup against the retry
//	                      policy (--policy FILE, or --attempts/--schedule-total;
//	                      by default the worker's default policy), the handler,
//	                      heartbeat and Lambda timeouts and, for FIFO queues,
//	                      ten times the attempts as maxReceiveCount, and its SNS
//	                      subscriptions (DLQ, queue policies, KMS, raw delivery
//	                      against --delivery envelope|raw); with --fleet, its
//	                      maxReceiveCount against the fleet controls' snoozes
//	                      (--snoozes, --exact-attempts); every finding says
//	                      what to change
//	dlq ls [QUEUE...]     each queue's DLQ, maxReceiveCount ("-" for a
//	                      subscription's DLQ, which SNS fills) and approximate
//	                      message counts (no message is received); without
//	                      QUEUE, every queue with a RedrivePolicy (--prefix)
//	dlq peek QUEUE        the DLQ's messages with why and where they failed,
//	                      without consuming them (their receive counts go up)
//	dlq redrive QUEUE     move the DLQ's messages back to QUEUE or --to another
//	                      queue: a server-side message move task when possible,
//	                      else a rate-limited manual move with filters
//	                      (--error-contains, --attr, --older-than, --newer-than),
//	                      --dry-run, --max and a progress display
//	dlq purge QUEUE       delete every message of the DLQ, after typing its name
//	                      (or --yes); refuses without a terminal and without --yes
//	policy preview [FILE] a delivery policy's schedule: retry, phase, delay,
//	                      cumulative time, total and a chart; --compare shows the
//	                      four backoff functions side by side
//	template QUEUE        a CloudFormation template for the queue pair (and with
//	                      --topic the fan-out chain, with --schedule-group the
//	                      schedule group, Scheduler's execution role and its
//	                      DLQ), with an alarm on every DLQ;
//	                      with --scaling keda|ecs|lambda a scaling configuration
//	                      (KEDA ScaledObject, ECS backlog-per-task policy, Lambda
//	                      event source mapping) derived from a measured capacity
//	                      (--stats, --handler-time, --capacity) and
//	                      --target-latency, each number's origin in a comment
//	version               the module version and the commit it was built from
//	                      (also --version)
//	cost SOURCE           what a worker's SQS requests cost: requests and billed
//	                      requests per message, dollars so far and per million
//	                      messages, from a worker.Stats JSON (a file, "-", or the
//	                      URL of a running worker's StatsHandler); --interval
//	                      polls the URL and prints each interval's live rate
//	console               the web console (package console) on --addr (default
//	                      127.0.0.1:9470): queues, DLQs grouped by failure
//	                      reason, workers (--worker NAME=URL), fleet controls
//	                      (--table: pause switches, shared breakers, caps in
//	                      use; pause and resume with --actions); read-only
//	                      unless --actions; --queues to limit what it shows
//	pause QUEUE           pause the queue for every worker watching its switch in
//	                      the fleet table (package fleet; --table or
//	                      SQSWORKER_FLEET_TABLE): within 5 s they stop receiving,
//	                      end their poll in flight and release what they
//	                      prefetched; running jobs finish. --reason is stored
//	resume QUEUE          clear the switch: the workers receive again
//	paused QUEUE          whether the queue is paused, since when, by whom, why
//	status QUEUE          the queue's message counts, its DLQ's and maxReceiveCount;
//	                      with a fleet table (--table or SQSWORKER_FLEET_TABLE)
//	                      also its pause switch, the shared breakers (open until
//	                      when) and the cap slots in use, per cap and key
//	fleet create-table TABLE  create the fleet table the fleet controls (pause,
//	                      rate limits, caps, shared breakers) keep their state
//	                      in, with fleet.CreateTable: partition key pk, on-demand,
//	                      time-to-live on expiresAt; on an existing table it
//	                      checks the key and turns time-to-live on
//	fleet check TABLE     check, without changes, that TABLE exists with the
//	                      fleet's key and time-to-live
//	schedules diff FILE   the changes (create, update with the fields, delete)
//	                      that would make an EventBridge Scheduler schedule
//	                      group hold the schedules FILE declares (JSON or YAML,
//	                      the fields of schedules.Schedule), without writing;
//	                      --check exits 1 when there are changes
//	schedules apply FILE  make the group hold exactly those schedules
//	                      (schedules.Apply): create, update, delete the rest;
//	                      idempotent; --role-arn, --dlq, --max-retries,
//	                      --max-event-age
//	schedules ls          a group's schedules (--group) with their next fire
//	                      time; -o json prints them as a FILE
//	unique create-table TABLE  create the unique keys table (package unique)
//	                      with unique.CreateTable: partition key key,
//	                      on-demand, time-to-live on expiresAt
//	unique check TABLE    check, without changes, that TABLE exists with the
//	                      unique keys' key and time-to-live
//
// QUEUE is a queue name, URL or ARN (package queueref): a name is the queue
// of the configured region and account, an ARN the queue of its own region
// and account (the command works in the ARN's region, whatever --region
// says), a URL the queue it names. A QUEUE of none of these forms is a usage
// error (exit 2). A queue whose RedrivePolicy names the queue itself is
// refused with exit 2 (doctor reports it, and setup gives it a dead-letter
// queue of its own), and so is `dlq redrive --to` the dead-letter queue
// itself. The dlq commands take the source queue,
// whose dead-letter queue is found from its RedrivePolicy, or the
// dead-letter queue itself (a queue other queues' RedrivePolicies name, or
// an SNS subscription's RedrivePolicy names). With --fanout (and --topic
// when there are several), QUEUE's subscription's dead-letter queue is
// taken; its messages are redriven to the subscribed queue, never to the
// topic.
//
// A failure to reach AWS at all — nothing listening at the endpoint, no
// credentials — ends a command with one line saying what to do.
//
// # AWS configuration
//
// The standard AWS SDK configuration applies: credentials and settings from
// the environment, ~/.aws/config and ~/.aws/credentials, the profile in
// --profile or AWS_PROFILE, the region in --region or AWS_REGION, and the
// endpoint in --endpoint-url, AWS_ENDPOINT_URL_SQS or AWS_ENDPOINT_URL (for
// LocalStack or a local emulator; it applies to SNS as well, else
// AWS_ENDPOINT_URL_SNS). policy preview, template, version and cost call no
// AWS API; cost's URL is the worker's StatsHandler, and a failure to reach
// it is reported as such.
//
// # Exit codes
//
//	0    success; doctor found no warning or error (info findings do not count)
//	1    problems: doctor found a warning or an error, a queue could not be
//	     read, a redrive left messages behind, dlq peek or dlq redrive went
//	     through a dead-letter queue without seeing every message it held (some
//	     were hidden), schedules diff --check found changes, or an AWS call
//	     failed
//	2    usage error, before any change: unknown command, bad flag or argument
//	     (a negative number, a value out of SQS's range, a queue or topic
//	     name SQS or SNS refuses, a filter policy of the wrong shape), an
//	     invalid policy file, setup lowering a setting without --force,
//	     --method move-task where a move task cannot be used (use --method
//	     manual), or a schedules FILE that cannot be read or declares an
//	     invalid schedule (schedules.ErrInvalid; also a missing schedule group)
//	3    not confirmed: purge was declined or could not ask (no terminal, no --yes)
//	130  interrupted (Ctrl-C)
//
// # IAM actions
//
//	setup        sqs:CreateQueue, sqs:SetQueueAttributes, sqs:GetQueueAttributes, sqs:GetQueueUrl;
//	             with --topic also sns:CreateTopic, sns:GetTopicAttributes, sns:Subscribe,
//	             sns:ListSubscriptionsByTopic, sns:GetSubscriptionAttributes, sns:SetSubscriptionAttributes
//	doctor       sqs:GetQueueAttributes, sqs:GetQueueUrl; for a queue without a RedrivePolicy also
//	             sqs:ListDeadLetterSourceQueues (or sqs:ListQueues where the endpoint lacks it);
//	             sns:ListSubscriptions, sns:GetSubscriptionAttributes (else a note)
//	dlq ls       sqs:GetQueueAttributes, sqs:GetQueueUrl (sqs:ListQueues without QUEUE)
//	dlq peek     sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:ReceiveMessage, sqs:ChangeMessageVisibility
//	dlq redrive  sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:ReceiveMessage, sqs:ChangeMessageVisibility,
//	             sqs:DeleteMessage (DLQ), sqs:SendMessage (destination); for move tasks also
//	             sqs:ListDeadLetterSourceQueues, sqs:StartMessageMoveTask,
//	             sqs:ListMessageMoveTasks, sqs:CancelMessageMoveTask
//	dlq purge    sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:PurgeQueue
//	console      reading: sqs:ListQueues (without --queues), sqs:GetQueueUrl, sqs:GetQueueAttributes,
//	             sqs:ReceiveMessage, sqs:ChangeMessageVisibility, sns:ListSubscriptions,
//	             sns:GetSubscriptionAttributes; --actions: also dlq redrive's, sqs:DeleteMessage, sqs:PurgeQueue;
//	             --table: dynamodb:DescribeTable, dynamodb:GetItem, dynamodb:Scan (with --actions
//	             dynamodb:UpdateItem) on the fleet table
//	dlq *        given a dead-letter queue's name: also sqs:ListDeadLetterSourceQueues (or sqs:ListQueues),
//	             and for a subscription's DLQ (or --fanout) sns:ListSubscriptions, sns:GetSubscriptionAttributes
//	pause, resume  sqs:GetQueueUrl; dynamodb:DescribeTable, dynamodb:UpdateItem on the fleet table
//	paused         sqs:GetQueueUrl; dynamodb:DescribeTable, dynamodb:GetItem on the fleet table
//	status         sqs:GetQueueUrl, sqs:GetQueueAttributes (queue and DLQ); with a table also
//	               dynamodb:DescribeTable, dynamodb:GetItem, dynamodb:Scan on the fleet table
//	fleet create-table  dynamodb:CreateTable, dynamodb:DescribeTable, dynamodb:DescribeTimeToLive,
//	               dynamodb:UpdateTimeToLive on the fleet table
//	fleet check    dynamodb:DescribeTable, dynamodb:DescribeTimeToLive on the fleet table
//	schedules diff, ls  scheduler:ListSchedules (resource *), scheduler:GetSchedule on
//	               arn:aws:scheduler:REGION:ACCOUNT:schedule/GROUP/*
//	schedules apply  diff's, scheduler:CreateSchedule, scheduler:UpdateSchedule,
//	               scheduler:DeleteSchedule on the group's schedules; iam:PassRole on the
//	               execution role (iam:PassedToService = scheduler.amazonaws.com)
//	unique create-table, unique check  as fleet create-table and fleet check, on the unique keys table
//
// The fleet commands reach DynamoDB through the same configuration; its
// endpoint comes from AWS_ENDPOINT_URL_DYNAMODB, else --endpoint-url, else
// AWS_ENDPOINT_URL: a command given a local endpoint never writes to the
// real regional DynamoDB. The schedules commands reach EventBridge
// Scheduler the same way (AWS_ENDPOINT_URL_SCHEDULER, else --endpoint-url,
// else AWS_ENDPOINT_URL).
package main
