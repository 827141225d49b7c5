package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

func versionCommand() *command {
	return &command{
		path:     "version",
		args:     "",
		synopsis: "print sqsworker's version and the commit it was built from",
		help: `Prints the module version (or "(devel)" for a build from a checkout) and,
when the build recorded it, the commit, its time and whether the work tree had
changes. "sqsworker --version" prints the same. Nothing calls AWS.`,
		run: runVersion,
	}
}

// buildVersion is what version prints.
type buildVersion struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// readVersion reads the build information the Go toolchain embedded.
func readVersion(info *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Module: "github.com/sqsworker/sqsworker", Version: "unknown"}
	if !ok || info == nil {
		return v
	}
	v.Go = info.GoVersion
	if info.Main.Path != "" {
		v.Module = info.Main.Path
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v buildVersion) String() string {
	s := "sqsworker " + v.Version
	if v.Commit != "" {
		c := v.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += " commit " + c
		if v.Time != "" {
			s += " (" + v.Time + ")"
		}
		if v.Modified {
			s += " with local changes"
		}
	}
	if v.Go != "" {
		s += ", built with " + v.Go
	}
	return s
}

func runVersion(a *app, _ context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	out := outputFlag(fs)
	if _, code, ok := a.parseWithOutput(cmd, fs, args, 0, 0, out); !ok {
		return code
	}
	read := a.buildInfo
	if read == nil {
		read = debug.ReadBuildInfo
	}
	v := readVersion(read())
	if *out == "json" {
		a.writeJSON(v)
		return exitOK
	}
	fmt.Fprintln(a.stdout, v)
	return exitOK
}
