package conformance

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func fairQueueBehaviours() []behaviour {
	return []behaviour{
		{name: "StandardQueueMessageGroupId", run: standardQueueMessageGroupID},
	}
}

// A standard queue takes a MessageGroupId (SQS fair queues, since July
// 2025: the group names the tenant), by SendMessage and SendMessageBatch,
// and returns it as the MessageGroupId system attribute. The group does
// not lock anything as on a FIFO queue: messages of one group are received
// together and held in flight at once.
func standardQueueMessageGroupID(e *env) {
	url := e.createQueue("fair", nil)
	e.sendGroup(url, "tenant-a", "", "a1")
	out, err := e.api.SendMessageBatch(e.ctx(), &sqs.SendMessageBatchInput{
		QueueUrl: aws.String(url),
		Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("0"), MessageBody: aws.String("a2"), MessageGroupId: aws.String("tenant-a")},
			{Id: aws.String("1"), MessageBody: aws.String("b1"), MessageGroupId: aws.String("tenant-b")},
			{Id: aws.String("2"), MessageBody: aws.String("none")},
		},
	})
	if err != nil || len(out.Failed) != 0 {
		e.t.Fatalf("SendMessageBatch with MessageGroupId on a standard queue: %v, failed %+v", err, out)
	}
	got := map[string]string{}
	var held []string
	for range 10 {
		for _, m := range e.recv(url, 10, 1) {
			got[aws.ToString(m.Body)] = groupOf(m)
			held = append(held, aws.ToString(m.ReceiptHandle))
		}
		if len(got) == 4 {
			break
		}
	}
	want := map[string]string{"a1": "tenant-a", "a2": "tenant-a", "b1": "tenant-b", "none": ""}
	if e.quirk(QuirkNoStandardMessageGroupId) {
		want = map[string]string{"a1": "", "a2": "", "b1": "", "none": ""}
		if fmt.Sprint(got) == fmt.Sprint(map[string]string{"a1": "tenant-a", "a2": "tenant-a", "b1": "tenant-b", "none": ""}) {
			e.t.Errorf("quirk %s declared, but the groups came back; remove the quirk", QuirkNoStandardMessageGroupId)
			return
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Errorf("received body → MessageGroupId %v, want %v, all four in flight at once (no group lock on a standard queue)", got, want)
	}
	for _, h := range held {
		e.deleteMessage(url, h)
	}
}
