#!/usr/bin/env bash
# LocalStack init hook (READY stage): creates the resources sqsworker's examples use.
# Runs inside the LocalStack container, where `awslocal` is on PATH. Idempotent:
# CreateQueue with the same attributes and an existing table are not errors.
set -euo pipefail

region=${AWS_DEFAULT_REGION:-us-east-1}
account=000000000000

# create_pair NAME [fifo]: NAME-dlq (14-day retention) and NAME redriving to it after 5 receives.
create_pair() {
  local name=$1 fifo=${2:-} suffix="" fifo_attrs=""
  if [ "$fifo" = fifo ]; then
    suffix=".fifo"
    fifo_attrs=',"FifoQueue":"true","ContentBasedDeduplication":"false"'
  fi
  local dlq="${name}-dlq${suffix}" src="${name}${suffix}"
  awslocal sqs create-queue --queue-name "$dlq" \
    --attributes "{\"MessageRetentionPeriod\":\"1209600\"${fifo_attrs}}" >/dev/null
  local dlq_arn="arn:aws:sqs:${region}:${account}:${dlq}"
  local redrive="{\\\"deadLetterTargetArn\\\":\\\"${dlq_arn}\\\",\\\"maxReceiveCount\\\":5}"
  awslocal sqs create-queue --queue-name "$src" \
    --attributes "{\"VisibilityTimeout\":\"30\",\"MessageRetentionPeriod\":\"345600\",\"RedrivePolicy\":\"${redrive}\"${fifo_attrs}}" >/dev/null
  echo "sqsworker: queue ${src} -> DLQ ${dlq}"
}

create_pair sqsworker-jobs
create_pair sqsworker-orders fifo

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
