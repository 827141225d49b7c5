package queueref_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

// A queue's name, URL and ARN resolve to the same URL.
func ExampleResolve() {
	ctx := context.Background()
	client, _ := sqstest.New() // or an *sqs.Client
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		fmt.Println(err)
		return
	}
	url := aws.ToString(out.QueueUrl)
	for _, ref := range []string{"orders", url, "arn:aws:sqs:us-east-1:000000000000:orders"} {
		got, err := queueref.Resolve(ctx, client, ref)
		fmt.Println(got, err)
	}
	// Output:
	// https://sqs.us-east-1.amazonaws.com/000000000000/orders <nil>
	// https://sqs.us-east-1.amazonaws.com/000000000000/orders <nil>
	// https://sqs.us-east-1.amazonaws.com/000000000000/orders <nil>
}

func ExampleParseARN() {
	a, err := queueref.ParseARN("arn:aws:sqs:eu-west-1:123456789012:orders.fifo")
	fmt.Println(a.Region, a.Account, a.Name, queueref.FIFO(a.Name), err)
	fmt.Println(a)
	_, err = queueref.ParseARN("arn:aws:sqs:eu-west-1:orders")
	fmt.Println(err)
	// Output:
	// eu-west-1 123456789012 orders.fifo true <nil>
	// arn:aws:sqs:eu-west-1:123456789012:orders.fifo
	// "arn:aws:sqs:eu-west-1:orders" is not an SQS queue ARN; want an ARN such as arn:aws:sqs:us-east-1:123456789012:orders
}

func ExampleName() {
	fmt.Println(queueref.Name("https://sqs.us-east-1.amazonaws.com/123456789012/orders"))
	fmt.Println(queueref.Name("arn:aws:sqs:eu-west-1:123456789012:orders-dlq"))
	fmt.Println(queueref.Name("orders.fifo"))
	// Output:
	// orders
	// orders-dlq
	// orders.fifo
}

func ExampleCheck() {
	fmt.Println(queueref.Check("orders"))
	fmt.Println(queueref.Check("my orders"))
	// Output:
	// <nil>
	// queue name "my orders" has ' ': only letters, digits, - and _ are allowed (and .fifo at the end of a FIFO queue's); a queue is given by a name such as orders (1 to 80 letters, digits, hyphens and underscores; a FIFO queue's ends in .fifo), a URL such as https://sqs.us-east-1.amazonaws.com/123456789012/orders or an ARN such as arn:aws:sqs:us-east-1:123456789012:orders
}
