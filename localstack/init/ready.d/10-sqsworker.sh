#!/usr/bin/env bash
# LocalStack init hook (READY stage): creates the resources sqsworker's examples use:
# two queue pairs, the SNS fan-out chain into one of them, and the attempts table.
# Runs inside the LocalStack container, where `awslocal` is on PATH. Idempotent:
# CreateQueue with the same attributes and an existing table are not errors.
set -euo pipefail

region=${AWS_DEFAULT_REGION:-us-east-1}
account=000000000000

# create_pair NAME [fifo]: NAME-dlq (14-day retention) and NAME redriving to it, with
# `sqsworker setup`'s maxReceiveCount: 5 for a standard queue, 40 for a FIFO queue (ten
# times the 4 deliveries of the default retry policy: a FIFO queue counts a receive for
# each message released behind a failed one of its group, and doctor warns below that).
create_pair() {
  local name=$1 fifo=${2:-} suffix="" fifo_attrs="" max_receives=5
  if [ "$fifo" = fifo ]; then
    suffix=".fifo"
    fifo_attrs=',"FifoQueue":"true","ContentBasedDeduplication":"false"'
    max_receives=40
  fi
  local dlq="${name}-dlq${suffix}" src="${name}${suffix}"
  awslocal sqs create-queue --queue-name "$dlq" \
    --attributes "{\"MessageRetentionPeriod\":\"1209600\"${fifo_attrs}}" >/dev/null
  local dlq_arn="arn:aws:sqs:${region}:${account}:${dlq}"
  local redrive="{\\\"deadLetterTargetArn\\\":\\\"${dlq_arn}\\\",\\\"maxReceiveCount\\\":${max_receives}}"
  awslocal sqs create-queue --queue-name "$src" \
    --attributes "{\"VisibilityTimeout\":\"30\",\"MessageRetentionPeriod\":\"345600\",\"RedrivePolicy\":\"${redrive}\"${fifo_attrs}}" >/dev/null
  echo "sqsworker: queue ${src} -> DLQ ${dlq} after ${max_receives} receives"
}

create_pair sqsworker-jobs
create_pair sqsworker-orders fifo

# SNS fan-out (as `sqsworker setup --topic sqsworker-rental-orders sqsworker-jobs` makes it):
# the topic, the subscription of sqsworker-jobs with its own dead-letter queue
# sqsworker-jobs-fanout-dlq (what SNS cannot deliver), and queue policies letting
# the topic send to both queues. Subscribe returns the existing subscription when
# the attributes are the same.
topic_arn=$(awslocal sns create-topic --name sqsworker-rental-orders --query TopicArn --output text)
fanout_dlq=sqsworker-jobs-fanout-dlq
fanout_dlq_url=$(awslocal sqs create-queue --queue-name "$fanout_dlq" \
  --attributes '{"MessageRetentionPeriod":"1209600"}' --query QueueUrl --output text)
# grant QUEUE: lets the topic's SNS principal send to QUEUE, conditioned on the topic's ARN.
grant() {
  local name=$1 url
  url=$(awslocal sqs get-queue-url --queue-name "$name" --query QueueUrl --output text)
  local arn="arn:aws:sqs:${region}:${account}:${name}"
  local policy="{\\\"Version\\\":\\\"2012-10-17\\\",\\\"Statement\\\":[{\\\"Sid\\\":\\\"sqsworker-sns-sqsworker-rental-orders\\\",\\\"Effect\\\":\\\"Allow\\\",\\\"Principal\\\":{\\\"Service\\\":\\\"sns.amazonaws.com\\\"},\\\"Action\\\":\\\"sqs:SendMessage\\\",\\\"Resource\\\":\\\"${arn}\\\",\\\"Condition\\\":{\\\"ArnEquals\\\":{\\\"aws:SourceArn\\\":\\\"${topic_arn}\\\"}}}]}"
  awslocal sqs set-queue-attributes --queue-url "$url" --attributes "{\"Policy\":\"${policy}\"}" >/dev/null
}
grant sqsworker-jobs
grant "$fanout_dlq"
fanout_redrive="{\\\"deadLetterTargetArn\\\":\\\"arn:aws:sqs:${region}:${account}:${fanout_dlq}\\\"}"
awslocal sns subscribe --topic-arn "$topic_arn" --protocol sqs \
  --notification-endpoint "arn:aws:sqs:${region}:${account}:sqsworker-jobs" \
  --attributes "{\"RedrivePolicy\":\"${fanout_redrive}\"}" >/dev/null
echo "sqsworker: topic sqsworker-rental-orders -> queue sqsworker-jobs (subscription DLQ ${fanout_dlq}, ${fanout_dlq_url})"

# The exact attempt counter's table (retry/dynamocounter.CreateTable): key "messageId" (string), TTL on "expiresAt".
if ! awslocal dynamodb describe-table --table-name sqsworker-attempts >/dev/null 2>&1; then
  awslocal dynamodb create-table --table-name sqsworker-attempts \
    --attribute-definitions AttributeName=messageId,AttributeType=S \
    --key-schema AttributeName=messageId,KeyType=HASH \
    --billing-mode PAY_PER_REQUEST >/dev/null
  awslocal dynamodb update-time-to-live --table-name sqsworker-attempts \
    --time-to-live-specification Enabled=true,AttributeName=expiresAt >/dev/null
fi
echo "sqsworker: table sqsworker-attempts"
