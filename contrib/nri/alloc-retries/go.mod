module example.com/alloc-retries-nri

go 1.19

require github.com/containerd/nri v0.8.0
