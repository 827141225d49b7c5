package producer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqstest"
)

// Each op sends benchJobs typed jobs (about 60 bytes of JSON each) to a
// fresh queue; the custom metrics are per message.
const benchJobs = 5000

type benchJob struct {
	Photo string `json:"photo"`
	Width int    `json:"width"`
}

type benchBackend interface {
	producer.API
	CreateQueue(ctx context.Context, params *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	DeleteQueue(ctx context.Context, params *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
}

// BenchmarkProducer measures the three ways of sending on sqstest (no
// latency: the producer's own cost; 10 ms per call: closer to SQS) and on
// the emulator.
func BenchmarkProducer(b *testing.B) {
	backends := []struct {
		name string
		get  func(b *testing.B) benchBackend
	}{
		{"sqstest", func(*testing.B) benchBackend { return sqstest.For(b) }},
		{"sqstest-10ms", func(*testing.B) benchBackend {
			return sqstest.For(b, func(o *sqstest.Options) { o.Latency = 10 * time.Millisecond })
		}},
		{"fauxqs", func(b *testing.B) benchBackend { return testenv.SQS(b) }},
	}
	modes := []struct {
		name string
		send func(b *testing.B, p *producer.Producer)
	}{
		{"SendBatch", func(b *testing.B, p *producer.Producer) {
			jobs := make([]benchJob, benchJobs)
			for i := range jobs {
				jobs[i] = benchJob{Photo: fmt.Sprintf("photo-%05d.jpg", i), Width: 640}
			}
			if _, err := producer.JSON[benchJob](p).SendBatch(context.Background(), jobs); err != nil {
				b.Fatal(err)
			}
		}},
		{"Enqueue", func(b *testing.B, p *producer.Producer) {
			s := producer.JSON[benchJob](p)
			for i := range benchJobs {
				if _, err := s.Enqueue(context.Background(), benchJob{Photo: fmt.Sprintf("photo-%05d.jpg", i), Width: 640}); err != nil {
					b.Fatal(err)
				}
			}
		}},
		{"Send-64-goroutines", func(b *testing.B, p *producer.Producer) {
			s := producer.JSON[benchJob](p)
			var wg sync.WaitGroup
			for g := range 64 {
				wg.Go(func() {
					for i := g; i < benchJobs; i += 64 {
						if _, err := s.Send(context.Background(), benchJob{Photo: fmt.Sprintf("photo-%05d.jpg", i), Width: 640}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		}},
	}
	for _, be := range backends {
		for _, mode := range modes {
			b.Run(be.name+"/"+mode.name, func(b *testing.B) {
				c := be.get(b)
				var elapsed time.Duration
				var requests int64
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName("bench-producer"))})
					if err != nil {
						b.Fatal(err)
					}
					p, err := producer.New(c, aws.ToString(out.QueueUrl))
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					start := time.Now()
					mode.send(b, p)
					if err := p.Close(context.Background()); err != nil {
						b.Fatal(err)
					}
					elapsed += time.Since(start)
					b.StopTimer()
					st := p.Stats()
					if st.Sent != benchJobs {
						b.Fatalf("sent %d of %d", st.Sent, benchJobs)
					}
					requests += st.Requests
					_, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
					b.StartTimer()
				}
				msgs := float64(b.N * benchJobs)
				b.ReportMetric(msgs/elapsed.Seconds(), "msgs/s")
				b.ReportMetric(float64(requests)/msgs, "req/msg")
			})
		}
	}
}
