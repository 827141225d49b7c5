package fanout

import (
	"errors"
	"strings"
	"testing"
)

const topicARN = "arn:aws:sns:us-east-1:000000000000:rental-orders"

func envelopeBody(fields string) string {
	return `{"Type":"Notification","MessageId":"m-1","TopicArn":"` + topicARN + `","Message":"{\"order\":1}","Timestamp":"2025-03-01T12:00:00.123Z"` + fields + `}`
}

func TestParseEnvelope(t *testing.T) {
	e, err := ParseEnvelope(envelopeBody(`,"Subject":"new order","MessageAttributes":{"status":{"Type":"String","Value":"confirmed"},"n":{"Type":"Number","Value":"3"},"b":{"Type":"Binary","Value":"AAH6"},"tags":{"Type":"String.Array","Value":"[\"a\",1]"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Message != `{"order":1}` || e.Subject != "new order" || e.MessageID != "m-1" || e.TopicARN != topicARN || e.Time().UnixMilli()%1000 != 123 {
		t.Errorf("envelope %+v", e)
	}
	a := e.SQSMessageAttributes()
	if *a["status"].StringValue != "confirmed" || *a["n"].DataType != "Number" || string(a["b"].BinaryValue) != "\x00\x01\xfa" || *a["tags"].DataType != "String.Array" {
		t.Errorf("attributes %+v", a)
	}
	// SNS sends "Subject": null when there is none.
	if e, err := ParseEnvelope(envelopeBody(`,"Subject":null`)); err != nil || e.Subject != "" {
		t.Errorf("null subject: %v %+v", err, e)
	}
}

func TestParseEnvelopeRejectsWithAReason(t *testing.T) {
	for body, reason := range map[string]string{
		`not json`:                   "not a JSON object",
		`{"Type":"Notification"} {}`: "more than one JSON value",
		`{"TopicArn":"x"}`:           "no Type",
		strings.Replace(envelopeBody(""), `"Notification"`, `"SubscriptionConfirmation"`, 1):                                   "confirm the subscription",
		strings.Replace(envelopeBody(""), `"m-1"`, `""`, 1):                                                                    "no MessageId",
		`{"Type":"Notification","MessageId":"m","TopicArn":"` + topicARN + `","Timestamp":"2025-03-01T12:00:00Z"}`:             "no Message",
		`{"Type":"Notification","MessageId":"m","TopicArn":"` + topicARN + `","Message":5,"Timestamp":"2025-03-01T12:00:00Z"}`: "Message is not a string",
		strings.Replace(envelopeBody(""), topicARN, "arn:aws:sqs:us-east-1:0:q", 1):                                            "bad TopicArn",
		strings.Replace(envelopeBody(""), "2025-03-01T12:00:00.123Z", "yesterday", 1):                                          "Timestamp",
		envelopeBody(`,"MessageAttributes":{"b":{"Type":"Binary","Value":"***"}}`):                                             "not base64",
		envelopeBody(`,"MessageAttributes":{"x":{"Type":"Date","Value":"now"}}`):                                               "unknown type",
	} {
		_, err := ParseEnvelope(body)
		if !errors.Is(err, ErrMalformedEnvelope) || !strings.Contains(err.Error(), reason) {
			t.Errorf("ParseEnvelope(%.60s) = %v; want an envelope error saying %q", body, err, reason)
		}
	}
}

func TestIsEnvelope(t *testing.T) {
	for body, want := range map[string]bool{
		envelopeBody(""):                       true,
		`{"Type":"x","TopicArn":1}`:            true,
		`{"Type":"order","id":1}`:              false,
		`[1]`:                                  false,
		` {"TopicArn":"a","Type":"b","x":[]} `: true,
		``:                                     false,
	} {
		if got := IsEnvelope(body); got != want {
			t.Errorf("IsEnvelope(%q) = %v", body, got)
		}
	}
}

func FuzzParseEnvelope(f *testing.F) {
	f.Add(envelopeBody(""))
	f.Add(envelopeBody(`,"MessageAttributes":{"b":{"Type":"Binary","Value":"AAH6"}}`))
	f.Add(`{"Type":"Notification"}`)
	f.Fuzz(func(t *testing.T, body string) {
		e, err := ParseEnvelope(body)
		if err != nil {
			if !errors.Is(err, ErrMalformedEnvelope) {
				t.Fatalf("error %v is not an envelope error", err)
			}
			return
		}
		if e.Type != notification || e.MessageID == "" || !IsEnvelope(body) {
			t.Fatalf("accepted %q as %+v", body, e)
		}
		if len(e.SQSMessageAttributes()) != len(e.MessageAttributes) {
			t.Fatalf("attributes lost converting %+v", e.MessageAttributes)
		}
	})
}
