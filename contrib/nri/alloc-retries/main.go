// Command alloc-retries is an NRI plugin that sets memory.alloc_retries in
// the linux.resources.unified of each container whose pod asks for it
// with the annotation alloc-retries.example.com/container.NAME.
//
// Installed as /opt/nri/plugins/NN-alloc-retries, the runtime starts it
// with its name and index in NRI_PLUGIN_NAME and NRI_PLUGIN_IDX, which
// the stub takes; run by hand or from a DaemonSet, -idx gives the index.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"

	"example.com/alloc-retries-nri/value"
)

// The pod annotation's prefix; the container's name follows it.
const annotation = "alloc-retries.example.com/container."

type plugin struct{}

// CreateContainer adds the container's value, checked, or fails the
// container with a message that names the annotation: a value the kernel
// would refuse, or read otherwise than its author, never reaches it.
func (plugin) CreateContainer(_ context.Context, pod *api.PodSandbox,
	ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	raw, ok := pod.GetAnnotations()[annotation+ctr.GetName()]
	if !ok {
		return nil, nil, nil
	}
	v, err := value.Parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s%s: %w", annotation, ctr.GetName(), err)
	}
	adj := &api.ContainerAdjustment{}
	adj.AddLinuxUnified("memory.alloc_retries", v)
	return adj, nil, nil
}

func main() {
	idx := flag.String("idx", "", "the plugin's index, two digits, when the runtime did not start it")
	flag.Parse()
	var opts []stub.Option
	// Giving an index the runtime gave already fails stub.New.
	if os.Getenv("NRI_PLUGIN_IDX") == "" {
		opts = append(opts, stub.WithPluginName("alloc-retries"),
			stub.WithPluginIdx(*idx))
	}
	s, err := stub.New(plugin{}, opts...)
	if err != nil {
		log.Fatalf("alloc-retries: %v", err)
	}
	if err := s.Run(context.Background()); err != nil {
		log.Fatalf("alloc-retries: %v", err)
	}
}
