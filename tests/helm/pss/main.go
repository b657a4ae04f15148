// Command pss-check evaluates every pod template of rendered manifests against the Kubernetes
// Pod Security Standards with the API server's own evaluator (k8s.io/pod-security-admission),
// at the level and version given, as the PodSecurity admission plugin would for a namespace
// labelled pod-security.kubernetes.io/enforce=<level>, enforce-version=<version>.
//
// Usage: pss-check LEVEL VERSION FILE   (LEVEL: baseline|restricted; VERSION: v1.30 or latest)
// Prints one line per pod-owning object and every violation; exits 1 on any violation.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

type podOwner struct {
	name string
	meta *metav1.ObjectMeta
	spec *corev1.PodSpec
}

func podsOf(doc []byte) (*podOwner, error) {
	var head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, err
	}
	name := head.Kind + "/" + head.Metadata.Name
	switch head.Kind {
	case "Pod":
		var o corev1.Pod
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &podOwner{name, &o.ObjectMeta, &o.Spec}, nil
	case "StatefulSet":
		var o appsv1.StatefulSet
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &podOwner{name, &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec}, nil
	case "Deployment":
		var o appsv1.Deployment
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &podOwner{name, &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec}, nil
	case "DaemonSet":
		var o appsv1.DaemonSet
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &podOwner{name, &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec}, nil
	case "Job":
		var o batchv1.Job
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &podOwner{name, &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec}, nil
	case "CronJob":
		var o batchv1.CronJob
		if err := yaml.UnmarshalStrict(doc, &o); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		t := &o.Spec.JobTemplate.Spec.Template
		return &podOwner{name, &t.ObjectMeta, &t.Spec}, nil
	}
	return nil, nil
}

func run(level, version, path string) (int, error) {
	lvl, err := api.ParseLevel(level)
	if err != nil {
		return 0, err
	}
	ver, err := api.ParseVersion(version)
	if err != nil {
		return 0, err
	}
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return 0, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	reader := utilyaml.NewYAMLReader(bufioReader(data))
	owners, violations := 0, 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		owner, err := podsOf(doc)
		if err != nil {
			return 0, err
		}
		if owner == nil {
			continue
		}
		owners++
		results := evaluator.EvaluatePod(api.LevelVersion{Level: lvl, Version: ver}, owner.meta, owner.spec)
		agg := policy.AggregateCheckResults(results)
		if agg.Allowed {
			fmt.Printf("ok   %s\n", owner.name)
			continue
		}
		violations++
		fmt.Printf("FAIL %s: %s\n", owner.name, agg.ForbiddenDetail())
	}
	if owners == 0 {
		return 0, errors.New("no pod-owning objects in " + path)
	}
	fmt.Printf("%d of %d pod templates meet Pod Security %q (%s)\n", owners-violations, owners, level, version)
	return violations, nil
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: pss-check LEVEL VERSION FILE")
		os.Exit(2)
	}
	violations, err := run(os.Args[1], os.Args[2], os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, "pss-check:", err)
		os.Exit(2)
	}
	if violations > 0 {
		os.Exit(1)
	}
}
