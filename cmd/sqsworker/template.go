package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/internal/validate"
)

func templateCommand() *command {
	return &command{
		path:     "template",
		args:     "QUEUE",
		synopsis: "print a CloudFormation template for a queue chain with alarms on every dead-letter queue",
		help: `Prints a CloudFormation template (YAML; -o json for JSON) for queue QUEUE and
its dead-letter queue QUEUE-dlq, and with --topic for the whole SNS fan-out
chain: the topic, the subscription of QUEUE (with its RedrivePolicy, raw
delivery and filter policy), the subscription's dead-letter queue
QUEUE-fanout-dlq, and the queue policy that lets the topic send to QUEUE
and to QUEUE-fanout-dlq. Each dead-letter queue gets a CloudWatch alarm that
fires as soon as it holds a message; give --alarm-topic (or the stack
parameter AlarmTopicArn) to be notified.

The alarms watch ApproximateNumberOfMessagesVisible, not
NumberOfMessagesSent: AWS documents that NumberOfMessagesSent does not count
the messages SQS's own redrive moves into a dead-letter queue after
maxReceiveCount receives, so an alarm on it would miss exactly those.

With --schedule-group GROUP it adds what package schedules and "sqsworker
schedules apply" need: the schedule group, the execution role Scheduler
assumes to send (trusted by scheduler.amazonaws.com for this account only,
with sqs:SendMessage on QUEUE and on Scheduler's dead-letter queue), and
that dead-letter queue, QUEUE-scheduler-dlq (a standard queue, as Scheduler
requires, with its alarm). Pass the outputs SchedulerRoleArn and
SchedulerDeadLetterQueueArn as Options.RoleARN and Options.DLQ (or --role-arn
and --dlq). Deploying it needs iam:CreateRole, iam:PutRolePolicy and
scheduler:CreateScheduleGroup besides the SQS and CloudWatch actions.

Nothing calls AWS; deploy it with aws cloudformation deploy (with
--capabilities CAPABILITY_NAMED_IAM when --schedule-group is given).

With --scaling keda|ecs|lambda it prints a scaling configuration for the
workers instead: run "sqsworker template --scaling keda --help".`,
		run: runTemplate,
	}
}

// templateOptions shape the template.
type templateOptions struct {
	queue, topic, filterPolicy, filterScope, alarmTopic string
	scheduleGroup                                       string
	raw, fifo                                           bool
	maxReceiveCount                                     int
	visibility, retention                               int // seconds; 0: SQS's default
}

func runTemplate(a *app, ctx context.Context, cmd *command, args []string) int {
	if scalingFlagged(args) {
		return runScaling(a, ctx, cmd, args)
	}
	fs := a.flags(cmd)
	out := outputFlag(fs)
	var o templateOptions
	fs.StringVar(&o.topic, "topic", "", "SNS topic name: add the fan-out chain (a name ending in .fifo makes FIFO resources)")
	fs.BoolVar(&o.raw, "raw", false, "with --topic: raw message delivery")
	filterFile := fs.String("filter-policy", "", "with --topic: the subscription's filter policy, a JSON file (\"-\" for stdin)")
	fs.StringVar(&o.filterScope, "filter-policy-scope", "", "with --topic: MessageAttributes or MessageBody")
	fs.BoolVar(&o.fifo, "fifo", false, "FIFO queues (implied by a .fifo queue or topic name)")
	fs.IntVar(&o.maxReceiveCount, "max-receive-count", 0, "the queue's maxReceiveCount (default 5, FIFO 40)")
	var visibility, retention time.Duration
	fs.Var(durationValue{&visibility}, "visibility-timeout", "the queue's VisibilityTimeout (default: SQS's 30s)")
	fs.Var(durationValue{&retention}, "retention", "the queue's MessageRetentionPeriod (default 4d)")
	fs.StringVar(&o.scheduleGroup, "schedule-group", "", "add an EventBridge Scheduler schedule group of this name, the execution role Scheduler sends to QUEUE with, and Scheduler's own dead-letter queue QUEUE-scheduler-dlq (package schedules)")
	fs.StringVar(&o.alarmTopic, "alarm-topic", "", "ARN of an SNS topic the alarms notify (default: the stack parameter AlarmTopicArn, empty: no notification)")
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, out)
	if !ok {
		return code
	}
	o.queue = pos[0]
	o.visibility, o.retention = int(visibility.Seconds()), int(retention.Seconds())
	if *filterFile != "" {
		data, err := readInput(a.stdin, *filterFile)
		if err != nil {
			fmt.Fprintf(a.stderr, "sqsworker %s: reading the filter policy: %v\n", cmd.path, err)
			return exitUsage
		}
		o.filterPolicy = string(data)
	}
	doc, err := buildTemplate(o)
	if err != nil {
		fmt.Fprintf(a.stderr, "sqsworker %s: %v\n", cmd.path, err)
		return exitUsage
	}
	return a.writeDoc(cmd, doc, *out)
}

var scheduleGroupRE = regexp.MustCompile(`^[0-9a-zA-Z_.-]{1,64}$`)

// Node builders: a template is a tree of ordered mappings.

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// str is a string scalar that YAML must not read as anything else.
func str(v string) *yaml.Node {
	n := scalar(v)
	n.Tag = "!!str"
	return n
}

func num(v int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)}
}

func boolean(v bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
}

// mapping builds an ordered mapping from key, value pairs; a key
// "# text" instead attaches text as the next key's comment.
func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	comment := ""
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		if c, ok := strings.CutPrefix(k, "# "); ok {
			comment = c
			i--
			continue
		}
		key := scalar(k)
		key.HeadComment, comment = comment, ""
		var v *yaml.Node
		switch x := kv[i+1].(type) {
		case *yaml.Node:
			v = x
		case string:
			v = str(x)
		case int:
			v = num(x)
		case bool:
			v = boolean(x)
		default:
			panic(fmt.Sprintf("template: value of %T", x))
		}
		n.Content = append(n.Content, key, v)
	}
	return n
}

func seq(items ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.SequenceNode, Content: items} }

func ref(name string) *yaml.Node { return mapping("Ref", name) }

func getAtt(resource, attr string) *yaml.Node {
	return mapping("Fn::GetAtt", seq(str(resource), str(attr)))
}

// jsonNode turns a JSON document into a node (JSON is YAML).
func jsonNode(doc string) (*yaml.Node, error) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		return nil, err
	}
	return n.Content[0], nil
}

// dlqAlarmComment explains the alarms' metric, with AWS's documentation.
const dlqAlarmComment = `Fires while the dead-letter queue holds a message. The metric is
ApproximateNumberOfMessagesVisible, not NumberOfMessagesSent: the SQS
Developer Guide ("Using dead-letter queues in Amazon SQS"; "Available
CloudWatch metrics for Amazon SQS") documents that NumberOfMessagesSent
counts messages sent to a queue with SendMessage (the worker's explicit
dead-letter moves, SNS's dead-lettered deliveries) but not messages SQS's
own redrive moved there after maxReceiveCount receives. Whoever put a
message there, a non-empty dead-letter queue is what needs attention.`

// buildTemplate returns the CloudFormation template.
func buildTemplate(o templateOptions) (*yaml.Node, error) {
	base, queueFIFO := strings.CutSuffix(o.queue, ".fifo")
	topicFIFO := strings.HasSuffix(o.topic, ".fifo")
	fifo := o.fifo || queueFIFO || topicFIFO
	if err := validate.QueueName(o.queue, queueFIFO); err != nil {
		return nil, err
	}
	if o.topic != "" {
		if err := validate.TopicName(o.topic, topicFIFO); err != nil {
			return nil, err
		}
	}
	if o.filterPolicy != "" {
		if err := validate.FilterPolicy(o.filterPolicy, o.filterScope); err != nil {
			return nil, err
		}
	}
	if o.topic != "" && fifo != topicFIFO {
		return nil, fmt.Errorf("a FIFO queue needs a FIFO topic and the reverse: name both with .fifo, or neither")
	}
	if o.scheduleGroup != "" && !scheduleGroupRE.MatchString(o.scheduleGroup) {
		return nil, fmt.Errorf("--schedule-group %q: use 1 to 64 letters, digits, '-', '_' or '.'", o.scheduleGroup)
	}
	if o.topic == "" && (o.raw || o.filterPolicy != "" || o.filterScope != "") {
		return nil, fmt.Errorf("--raw, --filter-policy and --filter-policy-scope need --topic")
	}
	switch o.filterScope {
	case "", "MessageAttributes", "MessageBody":
	default:
		return nil, fmt.Errorf("--filter-policy-scope %q: use MessageAttributes or MessageBody", o.filterScope)
	}
	name := func(suffix string) string {
		if fifo {
			return base + suffix + ".fifo"
		}
		return base + suffix
	}
	mrc := o.maxReceiveCount
	if mrc == 0 {
		mrc = deadletter.DefaultMaxReceiveCount
		if fifo {
			mrc = deadletter.DefaultFIFOMaxReceiveCount
		}
	}
	if mrc < 1 || mrc > sqslimit.MaxReceiveCount {
		return nil, fmt.Errorf("--max-receive-count %d: SQS allows 1 to %d", mrc, sqslimit.MaxReceiveCount)
	}
	retention := o.retention
	if retention == 0 {
		retention = int(sqslimit.DefaultRetention.Seconds())
	}
	queueProps := func(queueName string, retention int, extra ...any) *yaml.Node {
		kv := []any{"QueueName", queueName}
		if fifo {
			kv = append(kv, "FifoQueue", true)
		}
		kv = append(kv, "MessageRetentionPeriod", retention)
		return mapping(append(kv, extra...)...)
	}

	resources := &yaml.Node{Kind: yaml.MappingNode}
	add := func(id, comment string, res *yaml.Node) {
		k := scalar(id)
		k.HeadComment = comment
		resources.Content = append(resources.Content, k, res)
	}
	var extra []any
	if o.visibility > 0 {
		extra = append(extra, "VisibilityTimeout", o.visibility)
	}
	extra = append(extra, "RedrivePolicy", mapping("deadLetterTargetArn", getAtt("DeadLetterQueue", "Arn"), "maxReceiveCount", mrc))
	add("Queue", "The queue the workers consume; failed jobs go to DeadLetterQueue.",
		mapping("Type", "AWS::SQS::Queue", "Properties", queueProps(name(""), retention, extra...)))
	add("DeadLetterQueue", "Its dead-letter queue, keeping messages 14 days (the most SQS allows):\nlonger than the queue, as SQS keeps a redriven message's enqueue time.",
		mapping("Type", "AWS::SQS::Queue", "Properties", queueProps(name("-dlq"), int(sqslimit.MaxRetention.Seconds()))))
	alarms := []struct{ id, queue string }{{"DeadLetterQueueAlarm", "DeadLetterQueue"}}
	if o.topic != "" {
		topicProps := mapping("TopicName", o.topic)
		if fifo {
			topicProps = mapping("TopicName", o.topic, "FifoTopic", true)
		}
		add("Topic", "The topic publishers send to; SNS fans each message out to its subscriptions.",
			mapping("Type", "AWS::SNS::Topic", "Properties", topicProps))
		add("FanoutDeadLetterQueue", "The subscription's dead-letter queue: what SNS cannot deliver to Queue\n(queue deleted, policy refusing SNS, KMS key SNS may not use).",
			mapping("Type", "AWS::SQS::Queue", "Properties", queueProps(name("-fanout-dlq"), int(sqslimit.MaxRetention.Seconds()))))
		sub := []any{"Protocol", "sqs", "TopicArn", ref("Topic"), "Endpoint", getAtt("Queue", "Arn"),
			"RawMessageDelivery", o.raw, "RedrivePolicy", mapping("deadLetterTargetArn", getAtt("FanoutDeadLetterQueue", "Arn"))}
		if o.filterPolicy != "" {
			fp, err := jsonNode(o.filterPolicy)
			if err != nil || fp.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("the filter policy is not a JSON object")
			}
			sub = append(sub, "FilterPolicy", fp)
			if o.filterScope != "" {
				sub = append(sub, "FilterPolicyScope", o.filterScope)
			}
		}
		comment := "Queue's subscription to Topic. Without raw delivery each message arrives in\nSNS's JSON envelope: unwrap it with fanout.Unwrap in the handler."
		if o.raw {
			comment = "Queue's subscription to Topic, with raw delivery: the queue gets the\npublished message and its attributes, no envelope."
		}
		add("Subscription", comment, mapping("Type", "AWS::SNS::Subscription", "Properties", mapping(sub...)))
		add("QueuePolicy", "Lets SNS send Topic's messages, and only Topic's, to Queue and to\nFanoutDeadLetterQueue (without it every delivery fails).",
			mapping("Type", "AWS::SQS::QueuePolicy", "Properties", mapping(
				"Queues", seq(ref("Queue"), ref("FanoutDeadLetterQueue")),
				"PolicyDocument", mapping("Version", "2012-10-17", "Statement", seq(mapping(
					"Sid", "AllowTopicToSend", "Effect", "Allow", "Principal", mapping("Service", "sns.amazonaws.com"),
					"Action", "sqs:SendMessage", "Resource", seq(getAtt("Queue", "Arn"), getAtt("FanoutDeadLetterQueue", "Arn")),
					"Condition", mapping("ArnEquals", mapping("aws:SourceArn", ref("Topic")))))))))
		alarms = append(alarms, struct{ id, queue string }{"FanoutDeadLetterQueueAlarm", "FanoutDeadLetterQueue"})
	}
	if o.scheduleGroup != "" {
		add("ScheduleGroup", "The EventBridge Scheduler schedule group of package schedules (Options.Group,\nsqsworker schedules apply --group): Apply makes it hold exactly the declared\nschedules, so it belongs to this service alone.",
			mapping("Type", "AWS::Scheduler::ScheduleGroup", "Properties", mapping("Name", o.scheduleGroup)))
		add("SchedulerDeadLetterQueue", "Scheduler's own dead-letter queue (Options.DLQ): the deliveries it gave up on\nafter its retry policy. Scheduler takes a standard queue only.",
			mapping("Type", "AWS::SQS::Queue", "Properties", mapping("QueueName", base+"-scheduler-dlq", "MessageRetentionPeriod", int(sqslimit.MaxRetention.Seconds()))))
		add("SchedulerRole", "The execution role Scheduler assumes to send the jobs (Options.RoleARN):\ntrusted by scheduler.amazonaws.com for this account's schedules only, it may\nsend to Queue and to SchedulerDeadLetterQueue. The process that applies the\nschedules needs iam:PassRole on it.",
			mapping("Type", "AWS::IAM::Role", "Properties", mapping(
				"AssumeRolePolicyDocument", mapping("Version", "2012-10-17", "Statement", seq(mapping(
					"Effect", "Allow", "Principal", mapping("Service", "scheduler.amazonaws.com"), "Action", "sts:AssumeRole",
					"Condition", mapping("StringEquals", mapping("aws:SourceAccount", ref("AWS::AccountId")))))),
				"Policies", seq(mapping("PolicyName", "send-scheduled-jobs", "PolicyDocument", mapping("Version", "2012-10-17", "Statement", seq(mapping(
					"Effect", "Allow", "Action", "sqs:SendMessage",
					"Resource", seq(getAtt("Queue", "Arn"), getAtt("SchedulerDeadLetterQueue", "Arn"))))))))))
		alarms = append(alarms, struct{ id, queue string }{"SchedulerDeadLetterQueueAlarm", "SchedulerDeadLetterQueue"})
	}
	for i, al := range alarms {
		comment := ""
		if i == 0 {
			comment = dlqAlarmComment
		}
		add(al.id, comment, mapping("Type", "AWS::CloudWatch::Alarm", "Properties", mapping(
			"AlarmDescription", mapping("Fn::Sub", fmt.Sprintf("${%s.QueueName} holds messages: look with `sqsworker dlq peek ${%s.QueueName}`", al.queue, al.queue)),
			"Namespace", "AWS/SQS", "MetricName", "ApproximateNumberOfMessagesVisible",
			"Dimensions", seq(mapping("Name", "QueueName", "Value", getAtt(al.queue, "QueueName"))),
			"Statistic", "Maximum", "Period", 300, "EvaluationPeriods", 1,
			"Threshold", 0, "ComparisonOperator", "GreaterThanThreshold", "TreatMissingData", "notBreaching",
			"AlarmActions", mapping("Fn::If", seq(str("HasAlarmTopic"), seq(ref("AlarmTopicArn")), ref("AWS::NoValue"))))))
	}

	outputs := mapping(
		"QueueUrl", mapping("Value", ref("Queue")),
		"DeadLetterQueueUrl", mapping("Value", ref("DeadLetterQueue")),
	)
	if o.topic != "" {
		outputs.Content = append(outputs.Content,
			scalar("TopicArn"), mapping("Value", ref("Topic")),
			scalar("FanoutDeadLetterQueueUrl"), mapping("Value", ref("FanoutDeadLetterQueue")))
	}
	if o.scheduleGroup != "" {
		outputs.Content = append(outputs.Content,
			scalar("ScheduleGroupName"), mapping("Value", ref("ScheduleGroup")),
			scalar("SchedulerRoleArn"), mapping("Value", getAtt("SchedulerRole", "Arn")),
			scalar("SchedulerDeadLetterQueueArn"), mapping("Value", getAtt("SchedulerDeadLetterQueue", "Arn")))
	}
	what := "queue " + o.queue + " and its dead-letter queue"
	if o.topic != "" {
		what = "topic " + o.topic + " → subscription → " + what + ", with the subscription's dead-letter queue"
	}
	if o.scheduleGroup != "" {
		what += ", schedule group " + o.scheduleGroup + " with Scheduler's execution role and dead-letter queue"
	}
	doc := mapping(
		"AWSTemplateFormatVersion", "2010-09-09",
		"Description", "sqsworker: "+what+"; alarms on every dead-letter queue",
		"Parameters", mapping("AlarmTopicArn", mapping("Type", "String", "Default", o.alarmTopic,
			"Description", "SNS topic the dead-letter queue alarms notify; empty for none")),
		"Conditions", mapping("HasAlarmTopic", mapping("Fn::Not", seq(mapping("Fn::Equals", seq(ref("AlarmTopicArn"), str("")))))),
		"Resources", resources,
		"Outputs", outputs,
	)
	doc.HeadComment = "Generated by `sqsworker template`. Deploy: aws cloudformation deploy --template-file FILE --stack-name NAME"
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{doc}}, nil
}
