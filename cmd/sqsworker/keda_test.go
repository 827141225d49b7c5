package main

import (
	"flag"
	"regexp"
	"strings"
	"testing"
	"time"
)

// defaultPattern matches a stated default.
var defaultPattern = regexp.MustCompile(`\(default [^)]*\)`)

// doubledDefault returns the first line of help that states the same
// default twice, or "".
func doubledDefault(help string) string {
	for _, line := range strings.Split(help, "\n") {
		seen := map[string]bool{}
		for _, d := range defaultPattern.FindAllString(line, -1) {
			if seen[d] {
				return strings.TrimSpace(line)
			}
			seen[d] = true
		}
	}
	return ""
}

// A bare queue name takes its region from the environment, as the global
// help says AWS_REGION applies; --region and a URL's or ARN's own region
// win over it.
func TestScalingKEDARegionFromEnvironment(t *testing.T) {
	h := newHarness(t)
	keda := []string{"template", "--scaling", "keda", "--capacity", "10", "--target-latency", "30s"}
	for _, tc := range []struct {
		name, region, defaultRegion string
		args                        []string
		want                        string
	}{
		{"AWS_REGION", "eu-west-1", "", []string{"orders"}, "eu-west-1"},
		{"AWS_DEFAULT_REGION", "", "ap-south-1", []string{"orders"}, "ap-south-1"},
		{"AWS_REGION before AWS_DEFAULT_REGION", "eu-west-1", "ap-south-1", []string{"orders"}, "eu-west-1"},
		{"--region first", "eu-west-1", "", []string{"--region", "us-west-2", "orders"}, "us-west-2"},
		{"the URL's region first", "eu-west-1", "", []string{"https://sqs.eu-central-1.amazonaws.com/123456789012/orders"}, "eu-central-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_REGION", tc.region)
			t.Setenv("AWS_DEFAULT_REGION", tc.defaultRegion)
			code, out, errOut := h.run(t, append(keda, tc.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got := dig(t, parseYAML(t, out), "spec", "triggers", 0, "metadata", "awsRegion"); got != tc.want {
				t.Errorf("awsRegion = %v, want %s", got, tc.want)
			}
		})
	}
}

// --name and --namespace go into metadata as they are, so they are checked
// against Kubernetes' DNS-1123 label rule with a clear error; names derived
// from the queue are made valid.
func TestScalingKEDAKubernetesNames(t *testing.T) {
	h := newHarness(t)
	keda := []string{"template", "--scaling", "keda", "--capacity", "10", "--target-latency", "30s", "--region", "eu-west-1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "Bad_Name", "orders"}, `--name "Bad_Name" is not a valid Kubernetes name (it has 'B'): use at most 63 lowercase letters, digits and '-', starting and ending with a letter or a digit, e.g. "bad-name"`},
		{[]string{"--name", "-orders", "orders"}, `--name "-orders" is not a valid Kubernetes name (it must start and end with a lowercase letter or a digit)`},
		{[]string{"--name", "orders.worker", "orders"}, `--name "orders.worker" is not a valid Kubernetes name (it has '.')`},
		{[]string{"--name", strings.Repeat("a", 64), "orders"}, "is not a valid Kubernetes name (it is 64 characters long)"},
		{[]string{"--namespace", "Jobs", "orders"}, `--namespace "Jobs" is not a valid Kubernetes name (it has 'J')`},
	} {
		code, out, errOut := h.run(t, append(keda, tc.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 saying %q", tc.args, code, out, errOut, tc.want)
		}
	}
	// Given names that fit, and a queue name of 80 characters, which the
	// template cuts to 63.
	code, out, errOut := h.run(t, append(keda, "--name", "orders-worker-2", "--namespace", "jobs", "orders")...)
	if code != exitOK || dig(t, parseYAML(t, out), "metadata", "name") != "orders-worker-2" {
		t.Errorf("a valid --name: exit %d, %s%s", code, out, errOut)
	}
	long := strings.Repeat("Q", 40) + "_" + strings.Repeat("r", 39)
	code, out, errOut = h.run(t, append(keda, long)...)
	if code != exitOK {
		t.Fatalf("an 80-character queue name: exit %d: %s", code, errOut)
	}
	name, _ := dig(t, parseYAML(t, out), "metadata", "name").(string)
	if err := checkDNSLabel("name", name); err != nil || len(name) != 63 {
		t.Errorf("the name derived from %q is %q (%d characters): %v", long, name, len(name), err)
	}
}

// No flag's help says its default twice: a flag whose usage gives its
// default itself ("(default 5m)") does not also get the flag package's.
func TestHelpStatesEachDefaultOnce(t *testing.T) {
	h := newHarness(t)
	helps := [][]string{{"template", "--scaling", "keda", "--help"}}
	for _, c := range commands() {
		helps = append(helps, append(strings.Fields(c.path), "--help"))
	}
	for _, args := range helps {
		code, out, _ := h.run(t, args...)
		if code != exitOK {
			t.Errorf("%v: exit %d", args, code)
		}
		if m := doubledDefault(out); m != "" {
			t.Errorf("%v: %q", args, m)
		}
	}
	// The cause: a flag.Value given a starting value (a duration flag)
	// gets "(default V)" from PrintDefaults, whatever its usage says.
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	cooldown := 5 * time.Minute
	fs.Var(durationValue{&cooldown}, "cooldown", "ScaleInCooldown (default 5m)")
	fs.Var(durationValue{&cooldown}, "other", "the same, unstated")
	var b strings.Builder
	(&app{}).printUsage(&b, &command{path: "x"}, fs)
	if got := b.String(); strings.Count(got, "(default 5m)") != 2 || doubledDefault(got) != "" {
		t.Errorf("printUsage:\n%s", got)
	}
	// The defaults the flag package prints are still there.
	_, out, _ := h.run(t, "template", "--scaling", "keda", "--help")
	for _, want := range []string{"ecs: ScaleInCooldown (default 5m)\n", "keda: maxReplicaCount; ecs: MaxCapacity (default 10)\n", "output format: text or json (default \"text\")\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("template --scaling --help lacks %q", want)
		}
	}
}
