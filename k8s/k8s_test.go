// Package k8s_test checks Mercado's Kubernetes manifests as they are
// deployed: each overlay, and the load test Job, rendered by `kubectl
// kustomize`, then decoded object by object into the Kubernetes API's own
// types, strictly (a misspelt or misplaced field is an error, as the API
// server's strict field validation would make it), and checked against
// the code's ports and commands. It holds no code, only this test.
package k8s_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/lab/shop"
)

// services are the five and the listen addresses their code defaults to.
func services() map[string]serve.Common { return shop.Defaults() }

func port(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	var n int32
	if _, err := fmt.Sscan(p, &n); err != nil {
		t.Fatalf("listen address %q: %v", addr, err)
	}
	return n
}

// kinds are the types a rendered object may have, by apiVersion and kind.
// Anything else is an error: this test must know every kind it deploys.
var kinds = map[string]func() any{
	"v1/Namespace":                  func() any { return new(corev1.Namespace) },
	"v1/ConfigMap":                  func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                     func() any { return new(corev1.Secret) },
	"v1/Service":                    func() any { return new(corev1.Service) },
	"apps/v1/Deployment":            func() any { return new(appsv1.Deployment) },
	"apps/v1/StatefulSet":           func() any { return new(appsv1.StatefulSet) },
	"policy/v1/PodDisruptionBudget": func() any { return new(policyv1.PodDisruptionBudget) },
	"batch/v1/Job":                  func() any { return new(batchv1.Job) },
}

// decodeStrict decodes one YAML document into v, rejecting duplicate keys
// and fields v's type does not have.
func decodeStrict(doc []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one object in the document")
	}
	return nil
}

// decodeObject decodes one rendered object into its API type.
func decodeObject(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("apiVersion %q kind %q: not a kind this test knows", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	if err := decodeStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// manifests are the objects of one rendered kustomization, by type.
type manifests struct {
	namespaces   []*corev1.Namespace
	configMaps   []*corev1.ConfigMap
	secrets      []*corev1.Secret
	services     []*corev1.Service
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
	pdbs         []*policyv1.PodDisruptionBudget
	jobs         []*batchv1.Job
	all          []metav1.Object
}

// render runs `kubectl kustomize dir` and decodes every object strictly.
func render(t *testing.T, dir string) manifests {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kubectl is not installed, and CI must render the kustomize overlays (apt-get install kubectl)")
		}
		t.Skip("kubectl is not installed: cannot render the kustomize overlays (apt-get install kubectl, or see docs/deploy.md)")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	var m manifests
	r := k8syaml.NewYAMLReader(bufio.NewReader(&stdout))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: splitting the rendered YAML: %v", dir, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, err := decodeObject(doc)
		if err != nil {
			t.Fatalf("%s: %v\n%s", dir, err, doc)
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			m.namespaces = append(m.namespaces, o)
		case *corev1.ConfigMap:
			m.configMaps = append(m.configMaps, o)
		case *corev1.Secret:
			m.secrets = append(m.secrets, o)
		case *corev1.Service:
			m.services = append(m.services, o)
		case *appsv1.Deployment:
			m.deployments = append(m.deployments, o)
		case *appsv1.StatefulSet:
			m.statefulSets = append(m.statefulSets, o)
		case *policyv1.PodDisruptionBudget:
			m.pdbs = append(m.pdbs, o)
		case *batchv1.Job:
			m.jobs = append(m.jobs, o)
		}
		m.all = append(m.all, obj.(metav1.Object))
	}
	if len(m.all) == 0 {
		t.Fatalf("kubectl kustomize %s rendered nothing", dir)
	}
	return m
}

func findNamed[T metav1.Object](objs []T, name string) (T, bool) {
	for _, o := range objs {
		if o.GetName() == name {
			return o, true
		}
	}
	var zero T
	return zero, false
}

// TestStrictDecoding: the decoder this test relies on does reject what
// the API server would.
func TestStrictDecoding(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 2\n",
		"misplaced field": "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  containerPort: 80\n",
		"duplicate key":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: '1', a: '2'}\n",
		"unknown kind":    "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeObject([]byte(doc)); err == nil {
				t.Errorf("decoded without an error:\n%s", doc)
			}
		})
	}
	if _, err := decodeObject([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: '1'}\n")); err != nil {
		t.Errorf("a valid ConfigMap: %v", err)
	}
}

func TestOverlays(t *testing.T) {
	for _, mode := range []string{"fragile", "naive", "budgeted"} {
		t.Run(mode, func(t *testing.T) {
			m := render(t, "overlays/"+mode)
			checkNamespace(t, m)
			checkMode(t, m, mode)
			for name, c := range services() {
				checkService(t, m, name, port(t, c.Addr), port(t, c.AdminAddr))
			}
			checkPostgres(t, m)
			for _, d := range m.deployments {
				checkPod(t, "Deployment "+d.Name, d.Spec.Template.Spec, true)
				checkPDB(t, m, "Deployment "+d.Name, d.Spec.Template.Labels)
			}
			for _, s := range m.statefulSets {
				checkPod(t, "StatefulSet "+s.Name, s.Spec.Template.Spec, true)
				checkPDB(t, m, "StatefulSet "+s.Name, s.Spec.Template.Labels)
			}
		})
	}
}

func TestLoadTestJob(t *testing.T) {
	m := render(t, "loadtest")
	checkNamespace(t, m)
	job, ok := findNamed(m.jobs, "mercado-load")
	if !ok {
		t.Fatal("no Job mercado-load")
	}
	pod := job.Spec.Template.Spec
	checkPod(t, "Job mercado-load", pod, false)
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("Job mercado-load: restartPolicy %q, want Never (a half-run load test is not repeated)", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 || len(pod.Containers[0].Args) == 0 || pod.Containers[0].Args[0] != "load" {
		t.Fatalf("Job mercado-load does not run `mercado load`: %+v", pod.Containers)
	}
	gw := services()["gateway"]
	args := pod.Containers[0].Args
	for _, want := range []string{
		fmt.Sprintf("--gateway=http://gateway:%d", port(t, gw.Addr)),
		fmt.Sprintf("--admin=http://gateway:%d", port(t, gw.AdminAddr)),
	} {
		if !slices.Contains(args, want) {
			t.Errorf("Job mercado-load: args %v lack %s", args, want)
		}
	}
}

// checkNamespace: everything lives in the namespace mercado.
func checkNamespace(t *testing.T, m manifests) {
	t.Helper()
	for _, o := range m.all {
		if _, ok := o.(*corev1.Namespace); ok {
			continue
		}
		if o.GetNamespace() != "mercado" {
			t.Errorf("%T %s is in namespace %q, want mercado", o, o.GetName(), o.GetNamespace())
		}
	}
}

// checkMode: the overlay sets MERCADO_MODE in the ConfigMap every
// service reads, and every service reads that ConfigMap (kustomize
// renames it with a hash of its content).
func checkMode(t *testing.T, m manifests, mode string) {
	t.Helper()
	var name string
	for _, c := range m.configMaps {
		if strings.HasPrefix(c.Name, "mercado-config") {
			name = c.Name
			if got := c.Data["MERCADO_MODE"]; got != mode {
				t.Errorf("ConfigMap %s: MERCADO_MODE = %q, want %q", c.Name, got, mode)
			}
		}
	}
	if name == "" {
		t.Fatal("no ConfigMap mercado-config")
	}
	for svc := range services() {
		d, ok := findNamed(m.deployments, svc)
		if !ok {
			continue // checkService reports it
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			reads := false
			for _, e := range c.EnvFrom {
				if e.ConfigMapRef != nil && e.ConfigMapRef.Name == name {
					reads = true
				}
			}
			if !reads {
				t.Errorf("Deployment %s, container %s: does not read ConfigMap %s (the mode)", svc, c.Name, name)
			}
		}
	}
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// fromSecret reports whether c's environment variable name is read from
// a key of a Secret.
func fromSecret(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Key != "" {
			return true
		}
	}
	return false
}

// checkService: a Deployment running `mercado serve <name>` on the code's
// ports, probed on them, behind a Service.
func checkService(t *testing.T, m manifests, name string, serving, admin int32) {
	t.Helper()
	d, ok := findNamed(m.deployments, name)
	if !ok {
		t.Errorf("no Deployment %s", name)
		return
	}
	if d.Spec.Selector == nil || !selects(d.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("Deployment %s: selector %v does not match its pods' labels %v", name, d.Spec.Selector, d.Spec.Template.Labels)
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Errorf("Deployment %s: %d containers, want 1", name, len(d.Spec.Template.Spec.Containers))
		return
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "mercado:dev" {
		t.Errorf("Deployment %s: image %q, want mercado:dev (the kustomization's images)", name, c.Image)
	}
	if want := []string{"serve", name}; !slices.Equal(c.Args, want) || len(c.Command) != 0 {
		t.Errorf("Deployment %s: command %v args %v, want the image's entry point with %v", name, c.Command, c.Args, want)
	}
	if got, want := envValue(c, "MERCADO_ADDR"), fmt.Sprintf(":%d", serving); got != want {
		t.Errorf("Deployment %s: MERCADO_ADDR = %q, want %q", name, got, want)
	}
	if got, want := envValue(c, "MERCADO_ADMIN_ADDR"), fmt.Sprintf(":%d", admin); got != want {
		t.Errorf("Deployment %s: MERCADO_ADMIN_ADDR = %q, want %q", name, got, want)
	}
	// The admin port listens on every interface of the pod (Prometheus and
	// the gateway's mode fan-out reach it), which mercado refuses without
	// a token unless told otherwise: the token comes from the Secret.
	if !fromSecret(c, "MERCADO_ADMIN_TOKEN") && envValue(c, "MERCADO_ADMIN_INSECURE") != "true" {
		t.Errorf("Deployment %s: MERCADO_ADMIN_TOKEN does not come from a Secret (and MERCADO_ADMIN_INSECURE is not true): "+
			"`mercado serve` refuses an admin port beyond loopback without a token", name)
	}
	ports := map[string]int32{}
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
	// while the database is out of reach). The gRPC services are started
	// and kept alive by the standard gRPC health service on their serving
	// port; the gateway by /healthz on its admin port.
	isAdmin := func(p intstr.IntOrString) bool {
		return (p.Type == intstr.String && p.StrVal == "admin") || (p.Type == intstr.Int && p.IntVal == admin)
	}
	if r := c.ReadinessProbe; r == nil || r.HTTPGet == nil || r.HTTPGet.Path != "/readyz" || !isAdmin(r.HTTPGet.Port) {
		t.Errorf("Deployment %s: readinessProbe is not GET /readyz on the admin port", name)
	}
	for what, p := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "startupProbe": c.StartupProbe} {
		if servingName == "grpc" {
			if p == nil || p.GRPC == nil || p.GRPC.Port != serving {
				t.Errorf("Deployment %s: %s is not a gRPC health probe on %d", name, what, serving)
			}
		} else if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || !isAdmin(p.HTTPGet.Port) {
			t.Errorf("Deployment %s: %s is not GET /healthz on the admin port", name, what)
		}
	}

	svc, ok := findNamed(m.services, name)
	if !ok {
		t.Errorf("no Service %s", name)
		return
	}
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("Service %s: selector %v does not select the Deployment's pods", name, svc.Spec.Selector)
	}
	got := map[int32]bool{}
	for _, p := range svc.Spec.Ports {
		got[p.Port] = true
		if p.TargetPort.Type != intstr.String || ports[p.TargetPort.StrVal] != p.Port {
			t.Errorf("Service %s: port %d targets %s, not the container port of that number", name, p.Port, p.TargetPort.String())
		}
	}
	if !got[serving] || !got[admin] {
		t.Errorf("Service %s: ports %v, want %d and %d", name, svc.Spec.Ports, serving, admin)
	}
}

// checkPDB: a PodDisruptionBudget covers the workload's pods.
func checkPDB(t *testing.T, m manifests, what string, podLabels map[string]string) {
	t.Helper()
	for _, p := range m.pdbs {
		if p.Spec.Selector != nil && selects(p.Spec.Selector, podLabels) {
			if p.Spec.MaxUnavailable == nil && p.Spec.MinAvailable == nil {
				t.Errorf("PodDisruptionBudget %s sets neither maxUnavailable nor minAvailable", p.Name)
			}
			return
		}
	}
	t.Errorf("%s: no PodDisruptionBudget selects its pods", what)
}

// checkPostgres: the one stateful part, with its data on a claim and a
// headless Service.
func checkPostgres(t *testing.T, m manifests) {
	t.Helper()
	ss, ok := findNamed(m.statefulSets, "postgres")
	if !ok {
		t.Fatal("no StatefulSet postgres")
	}
	if len(ss.Spec.VolumeClaimTemplates) == 0 {
		t.Fatal("StatefulSet postgres has no volumeClaimTemplates: its data would not survive the pod")
	}
	claim := ss.Spec.VolumeClaimTemplates[0]
	if _, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		t.Errorf("StatefulSet postgres: claim %s requests no storage", claim.Name)
	}
	mounted := false
	for _, c := range ss.Spec.Template.Spec.Containers {
		for _, vm := range c.VolumeMounts {
			if vm.Name == claim.Name {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("StatefulSet postgres: no container mounts the claim %s", claim.Name)
	}
	svc, ok := findNamed(m.services, "postgres")
	if !ok || svc.Spec.ClusterIP != corev1.ClusterIPNone || ss.Spec.ServiceName != "postgres" {
		t.Error("no headless Service postgres governing the StatefulSet")
	}
}

// checkPod: every container is probed (when it serves), bounded, and
// locked down: not root, read-only root file system, no privilege
// escalation, no capabilities, the RuntimeDefault seccomp profile.
func checkPod(t *testing.T, what string, pod corev1.PodSpec, serving bool) {
	t.Helper()
	psc := pod.SecurityContext
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod seccompProfile is not RuntimeDefault", what)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s: mounts a service-account token it does not need", what)
	}
	if len(pod.Containers) == 0 {
		t.Errorf("%s: no containers", what)
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		where := fmt.Sprintf("%s, container %s", what, c.Name)
		if serving && (c.ReadinessProbe == nil || c.LivenessProbe == nil) {
			t.Errorf("%s: needs a readinessProbe and a livenessProbe", where)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if !hasReq || !hasLim || req.IsZero() || lim.Cmp(req) < 0 {
				t.Errorf("%s: %s request %v and limit %v: want both, limit at least the request", where, r, req.String(), lim.String())
			}
		}
		csc := c.SecurityContext
		nonRoot := (psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot) ||
			(csc != nil && csc.RunAsNonRoot != nil && *csc.RunAsNonRoot)
		if !nonRoot {
			t.Errorf("%s: runAsNonRoot is not true", where)
		}
		uid := psc.RunAsUser
		if csc != nil && csc.RunAsUser != nil {
			uid = csc.RunAsUser
		}
		if uid == nil || *uid == 0 {
			t.Errorf("%s: runs as uid %v, want a non-zero runAsUser", where, uid)
		}
		switch {
		case csc == nil:
			t.Errorf("%s: no securityContext", where)
		case csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation:
			t.Errorf("%s: allowPrivilegeEscalation is not false", where)
		case csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem:
			t.Errorf("%s: readOnlyRootFilesystem is not true", where)
		case csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(csc.Capabilities.Add) > 0:
			t.Errorf("%s: capabilities %v, want drop [ALL] and nothing added", where, csc.Capabilities)
		case csc.Privileged != nil && *csc.Privileged:
			t.Errorf("%s: privileged", where)
		}
	}
}

// selects reports whether sel, which must not be empty (an empty selector
// selects everything), selects pods with these labels.
func selects(sel *metav1.LabelSelector, podLabels map[string]string) bool {
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(podLabels))
}
