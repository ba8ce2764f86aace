// Module images builds kquant's container images as OCI archives without Docker or a
// registry (make images, hack/images.sh). It is separate from the project module
// so go-containerregistry never leaks into kquant's own go.mod.
module github.com/kquant/kquant/hack/tools/images

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
