package s3payload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// memS3 is an in-memory S3 with the calls a Store makes.
type memS3 struct {
	mu      sync.Mutex
	objects map[string][]byte // by bucket + "/" + key
	puts    []*s3.PutObjectInput
	gets    int
	failGet error // returned by GetObject when set
}

func newMemS3() *memS3 { return &memS3{objects: map[string][]byte{}} }

func (m *memS3) PutObject(ctx context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)] = b
	m.puts = append(m.puts, in)
	return &s3.PutObjectOutput{}, nil
}

func (m *memS3) GetObject(ctx context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.failGet != nil {
		return nil, m.failGet
	}
	b, ok := m.objects[aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key)]
	if !ok {
		return nil, &s3types.NoSuchKey{Message: aws.String("The specified key does not exist.")}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(b)), ContentLength: aws.Int64(int64(len(b)))}, nil
}

func (m *memS3) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, _ ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, aws.ToString(in.Bucket)+"/"+aws.ToString(in.Key))
	return &s3.DeleteObjectOutput{}, nil
}

func (m *memS3) has(bucket, key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.objects[bucket+"/"+key]
	return ok
}

func (m *memS3) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.objects)
}

// fixture is one file of testdata: a received message in an extended
// client's wire format and the object its pointer names.
type fixture struct {
	Name        string
	Description string `json:"description"`
	Message     struct {
		MessageID         string                        `json:"MessageId"`
		Body              string                        `json:"Body"`
		MessageAttributes map[string]wireAttributeValue `json:"MessageAttributes"`
	} `json:"message"`
	Object struct {
		Bucket  string `json:"bucket"`
		Key     string `json:"key"`
		Pattern string `json:"pattern"`
		Size    int    `json:"size"`
	} `json:"object"`
}

// wireAttributeValue is a message attribute as SQS's JSON protocol carries it.
type wireAttributeValue struct {
	DataType    string `json:"DataType"`
	StringValue string `json:"StringValue"`
}

func (f fixture) attributes() map[string]types.MessageAttributeValue {
	out := map[string]types.MessageAttributeValue{}
	for k, v := range f.Message.MessageAttributes {
		out[k] = types.MessageAttributeValue{DataType: aws.String(v.DataType), StringValue: aws.String(v.StringValue)}
	}
	return out
}

// payload is the object's content: the pattern repeated to the size.
func (f fixture) payload() string {
	return strings.Repeat(f.Object.Pattern, f.Object.Size/len(f.Object.Pattern)+1)[:f.Object.Size]
}

func fixtures(t *testing.T) []fixture {
	t.Helper()
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var out []fixture
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var f fixture
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		f.Name = filepath.Base(file)
		out = append(out, f)
	}
	return out
}

func loadFixture(t *testing.T, name string) fixture {
	t.Helper()
	for _, f := range fixtures(t) {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no fixture %s", name)
	return fixture{}
}
