// Package k8s_test checks Mercado's Kubernetes manifests as they are
// deployed: each overlay rendered by `kubectl kustomize`, then read back
// object by object. It holds no code, only this test.
package k8s_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The services and their ports, as in the README.
var services = map[string]struct{ serving, admin int }{
	"gateway":  {8080, 9080},
	"orders":   {50051, 9081},
	"catalog":  {50052, 9082},
	"payments": {50053, 9083},
	"shipping": {50054, 9084},
}

// object is the part of a Kubernetes object this test reads.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		// A Service's selector is a plain map; a workload's is matchLabels.
		ServiceSelector map[string]string `yaml:"-"`
		Ports           []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
		ClusterIP            string `yaml:"clusterIP"`
		MaxUnavailable       any    `yaml:"maxUnavailable"`
		MinAvailable         any    `yaml:"minAvailable"`
		VolumeClaimTemplates []any  `yaml:"volumeClaimTemplates"`
		Template             struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	SecurityContext *struct {
		RunAsNonRoot   *bool `yaml:"runAsNonRoot"`
		RunAsUser      *int  `yaml:"runAsUser"`
		SeccompProfile *struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	StartupProbe   *probe `yaml:"startupProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext *struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

type probe struct {
	GRPC *struct {
		Port int `yaml:"port"`
	} `yaml:"grpc"`
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
	Exec *struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
}

// render runs `kubectl kustomize dir` and decodes every object.
func render(t *testing.T, dir string) []object {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: cannot render the kustomize overlays (apt-get install kubectl, or see docs/deploy.md)")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	var objs []object
	dec := yaml.NewDecoder(&stdout)
	for {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: decoding the rendered YAML: %v", dir, err)
		}
		var o object
		if err := node.Decode(&o); err != nil {
			t.Fatalf("%s: decoding an object: %v", dir, err)
		}
		if o.Kind == "Service" {
			var s struct {
				Spec struct {
					Selector map[string]string `yaml:"selector"`
				} `yaml:"spec"`
			}
			if err := node.Decode(&s); err != nil {
				t.Fatalf("%s: decoding Service %s: %v", dir, o.Metadata.Name, err)
			}
			o.Spec.ServiceSelector = s.Spec.Selector
		}
		objs = append(objs, o)
	}
	if len(objs) == 0 {
		t.Fatalf("kubectl kustomize %s rendered nothing", dir)
	}
	return objs
}

func find(objs []object, kind, name string) *object {
	for i := range objs {
		if objs[i].Kind == kind && objs[i].Metadata.Name == name {
			return &objs[i]
		}
	}
	return nil
}

func TestOverlays(t *testing.T) {
	for _, mode := range []string{"naive", "budgeted"} {
		t.Run(mode, func(t *testing.T) {
			objs := render(t, "overlays/"+mode)
			checkNamespace(t, objs)
			checkMode(t, objs, mode)
			for name, ports := range services {
				checkService(t, objs, name, ports.serving, ports.admin)
			}
			checkPostgres(t, objs)
			for _, o := range objs {
				if o.Kind == "Deployment" || o.Kind == "StatefulSet" {
					checkPod(t, o.Kind+" "+o.Metadata.Name, o.Spec.Template.Spec, true)
				}
			}
		})
	}
}

func TestLoadTestJob(t *testing.T) {
	objs := render(t, "loadtest")
	checkNamespace(t, objs)
	job := find(objs, "Job", "mercado-load")
	if job == nil {
		t.Fatal("no Job mercado-load")
	}
	pod := job.Spec.Template.Spec
	checkPod(t, "Job mercado-load", pod, false)
	if len(pod.Containers) != 1 || len(pod.Containers[0].Args) == 0 || pod.Containers[0].Args[0] != "load" {
		t.Errorf("Job mercado-load does not run `mercado load`: %+v", pod.Containers)
	}
}

// checkNamespace: everything lives in the namespace mercado.
func checkNamespace(t *testing.T, objs []object) {
	t.Helper()
	for _, o := range objs {
		if o.Kind == "Namespace" {
			continue
		}
		if o.Metadata.Namespace != "mercado" {
			t.Errorf("%s %s is in namespace %q, want mercado", o.Kind, o.Metadata.Name, o.Metadata.Namespace)
		}
	}
}

// checkMode: the overlay sets MERCADO_MODE in the ConfigMap every
// service reads.
func checkMode(t *testing.T, objs []object, mode string) {
	t.Helper()
	var found bool
	for _, o := range objs {
		if o.Kind == "ConfigMap" && strings.HasPrefix(o.Metadata.Name, "mercado-config") {
			found = true
			if got := o.Data["MERCADO_MODE"]; got != mode {
				t.Errorf("ConfigMap %s: MERCADO_MODE = %q, want %q", o.Metadata.Name, got, mode)
			}
		}
	}
	if !found {
		t.Error("no ConfigMap mercado-config")
	}
}

// checkService: a Deployment running `mercado serve <name>` on the
// README's ports, probed on them, behind a Service and a
// PodDisruptionBudget.
func checkService(t *testing.T, objs []object, name string, serving, admin int) {
	t.Helper()
	d := find(objs, "Deployment", name)
	if d == nil {
		t.Errorf("no Deployment %s", name)
		return
	}
	if !subset(d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
		t.Errorf("Deployment %s: selector %v does not match its pods' labels %v", name, d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels)
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment %s: %d containers, want 1", name, len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	if want := []string{"serve", name}; !slices.Equal(c.Args, want) {
		t.Errorf("Deployment %s: args %v, want %v", name, c.Args, want)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if got, want := env["MERCADO_ADDR"], ":"+strconv.Itoa(serving); got != want {
		t.Errorf("Deployment %s: MERCADO_ADDR = %q, want %q", name, got, want)
	}
	if got, want := env["MERCADO_ADMIN_ADDR"], ":"+strconv.Itoa(admin); got != want {
		t.Errorf("Deployment %s: MERCADO_ADMIN_ADDR = %q, want %q", name, got, want)
	}
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	servingName := "grpc"
	if name == "gateway" {
		servingName = "http"
	}
	if ports[servingName] != serving || ports["admin"] != admin {
		t.Errorf("Deployment %s: container ports %v, want %s=%d admin=%d", name, ports, servingName, serving, admin)
	}

	// Readiness is the admin /readyz (it turns 503 while draining or
	// while the database is out of reach); gRPC services are also probed
	// with the gRPC health service on their serving port.
	if r := c.ReadinessProbe; r == nil || r.HTTPGet == nil || r.HTTPGet.Path != "/readyz" || !samePort(r.HTTPGet.Port, "admin", admin) {
		t.Errorf("Deployment %s: readinessProbe is not GET /readyz on the admin port", name)
	}
	if servingName == "grpc" {
		if l := c.LivenessProbe; l == nil || l.GRPC == nil || l.GRPC.Port != serving {
			t.Errorf("Deployment %s: livenessProbe is not a gRPC health probe on %d", name, serving)
		}
	} else if l := c.LivenessProbe; l == nil || l.HTTPGet == nil || !samePort(l.HTTPGet.Port, "admin", admin) {
		t.Errorf("Deployment %s: livenessProbe is not an HTTP probe on the admin port", name)
	}

	svc := find(objs, "Service", name)
	if svc == nil {
		t.Errorf("no Service %s", name)
	} else {
		if !subset(svc.Spec.ServiceSelector, d.Spec.Template.Metadata.Labels) {
			t.Errorf("Service %s: selector %v does not select the Deployment's pods", name, svc.Spec.ServiceSelector)
		}
		got := map[int]bool{}
		for _, p := range svc.Spec.Ports {
			got[p.Port] = true
		}
		if !got[serving] || !got[admin] {
			t.Errorf("Service %s: ports %v, want %d and %d", name, svc.Spec.Ports, serving, admin)
		}
	}
	pdb := find(objs, "PodDisruptionBudget", name)
	if pdb == nil {
		t.Errorf("no PodDisruptionBudget %s", name)
	} else if !subset(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
		t.Errorf("PodDisruptionBudget %s does not select the Deployment's pods", name)
	}
}

// checkPostgres: the one stateful part, with its data on a claim, a
// headless Service and a PodDisruptionBudget.
func checkPostgres(t *testing.T, objs []object) {
	t.Helper()
	ss := find(objs, "StatefulSet", "postgres")
	if ss == nil {
		t.Fatal("no StatefulSet postgres")
	}
	if len(ss.Spec.VolumeClaimTemplates) == 0 {
		t.Error("StatefulSet postgres has no volumeClaimTemplates: its data would not survive the pod")
	}
	svc := find(objs, "Service", "postgres")
	if svc == nil || svc.Spec.ClusterIP != "None" {
		t.Error("no headless Service postgres")
	}
	if find(objs, "PodDisruptionBudget", "postgres") == nil {
		t.Error("no PodDisruptionBudget postgres")
	}
}

// checkPod: every container is probed (when serving), bounded, and
// locked down: not root, read-only root file system, no privilege
// escalation, no capabilities.
func checkPod(t *testing.T, what string, pod podSpec, serving bool) {
	t.Helper()
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("%s: pod securityContext.runAsNonRoot is not true", what)
	}
	if sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("%s: pod seccompProfile is not RuntimeDefault", what)
	}
	if len(pod.Containers) == 0 {
		t.Errorf("%s: no containers", what)
	}
	for _, c := range pod.Containers {
		where := fmt.Sprintf("%s, container %s", what, c.Name)
		if serving && (c.ReadinessProbe == nil || c.LivenessProbe == nil) {
			t.Errorf("%s: needs a readinessProbe and a livenessProbe", where)
		}
		for _, r := range []string{"cpu", "memory"} {
			if c.Resources.Requests[r] == "" || c.Resources.Limits[r] == "" {
				t.Errorf("%s: no %s request and limit", where, r)
			}
		}
		csc := c.SecurityContext
		switch {
		case csc == nil:
			t.Errorf("%s: no securityContext", where)
		case csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation:
			t.Errorf("%s: allowPrivilegeEscalation is not false", where)
		case csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem:
			t.Errorf("%s: readOnlyRootFilesystem is not true", where)
		case !slices.Equal(csc.Capabilities.Drop, []string{"ALL"}):
			t.Errorf("%s: capabilities.drop is %v, want [ALL]", where, csc.Capabilities.Drop)
		}
	}
}

// subset reports whether every label of sel is in labels (and sel is not
// empty: an empty selector selects everything).
func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// samePort reports whether a probe's port (a name or a number) is the
// named container port.
func samePort(port any, name string, number int) bool {
	switch p := port.(type) {
	case string:
		return p == name
	case int:
		return p == number
	}
	return false
}
