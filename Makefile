# The two commands of the README: `make up` and `make test`. Everything else
# here is what they are made of.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
STACK ?= dev
NODE ?= edpm-compute-0
ROOT := $(CURDIR)
# NODES: how many EDPM test nodes the environment runs (devenv/nodes.sh; 2 when not given)
ifdef NODES
export EDPM_NODE_COUNT := $(NODES)
endif

.PHONY: server-cpu graph up down test test-long unit quadlet integration lint env ssh toolchain venv environment status restart preview adopt nova-conf bench clean-env catalog schema mutants

## up: set up whatever is missing, then `pulumi up` on $(STACK): a preview's summary first and, on a
## terminal, a question (YES=1 applies without asking), each run's progress, a table per node at the end
up: environment
	@YES='$(YES)' devenv/up.sh $(STACK)

## environment: toolchain, venv, the single-node Kubernetes and the test nodes
environment: toolchain venv
	@devenv/start.sh

## status: each daemon of the local Kubernetes, its node and DNS, MetalLB and the data plane's DNS, and the test nodes
status:
	@export TOOLCHAIN_BIN="$$(devenv/toolchain.sh bindir)"; rc=0; devenv/cluster.sh status || rc=$$?; \
	  devenv/dataplane.sh status || rc=$$?; devenv/nodes.sh status || rc=$$?; exit $$rc

## restart: stop one daemon of the local Kubernetes and start it again (DAEMON=kube-apiserver, kubelet, ...,
## as `make status` lists them); it returns once the daemon is healthy (kubelet: the node Ready)
restart:
	@TOOLCHAIN_BIN="$$(devenv/toolchain.sh bindir)" devenv/cluster.sh restart '$(DAEMON)'

toolchain:
	@devenv/toolchain.sh all >/dev/null

venv:
	@devenv/venv.sh

## env: export lines for plain pulumi/kubectl: eval "$$(make -s env)"
env: toolchain venv
	@devenv/env.sh

## ssh: run CMD as root on test node NODE
ssh:
	@devenv/ssh.sh $(NODE) '$(subst ','\'',$(CMD))'

## nova-conf: what nova-compute on NODE loads for OPT (group.option) and from which file
nova-conf:
	@devenv/nova-conf.sh $(NODE) '$(OPT)'

## server-cpu: where server SERVER runs and the CPU its libvirt domain gets (the domain XML on the node);
## NAMESPACE: the stack's namespace (default openstack)
server-cpu:
	@eval "$$(devenv/env.sh)"; .venv/bin/python -m tools.server_cpu '$(SERVER)' --namespace '$(or $(NAMESPACE),openstack)'

## catalog: rewrite the option catalog of nova NOVA_RELEASE (default: every shipped one) from that
## release's own option definitions, in a venv per release under ~/.cache/openstack-nova/catalog
catalog:
	@devenv/catalog.sh $(NOVA_RELEASE)

## schema: rewrite schema/stack-config.schema.json, the JSON Schema of stacks/Pulumi.<stack>.yaml, from the
## models of components/settings/schema.py (a unit test fails while the committed file differs)
schema: venv
	@.venv/bin/python -m tools.schema

## down: stop everything `make up` started and undo its changes to the host (data is kept)
down:
	@devenv/stop.sh

## clean-env: stop and forget the local environment (API objects, images, node files, Pulumi state)
clean-env: down
	@devenv/stop.sh --forget

## test: the suite CI runs (unit, lint, integration against the local environment, all but the long tests)
test: environment lint
	@devenv/run-tests.sh

## test-long: the integration tests longer than CI allows (faults, restarts, rotation, TLS and Ceph roll-outs)
test-long: environment
	@devenv/run-tests.sh --long

## unit: the unit tests (they run podman's Quadlet generators over the roles' units: `make quadlet` builds them)
unit: venv quadlet
	@.venv/bin/python -m pytest -q tests/unit

## quadlet: build podman's Quadlet generator of each podman line users' nodes run (QUADLET_VERSIONS in
## devenv/versions.env), from Go modules into the toolchain cache (under a minute on a cold cache; needs Go)
quadlet:
	@devenv/toolchain.sh quadlet >/dev/null

## mutants: break the program in small ways (a dependency dropped, a secret left unmarked, a line of a rendered
## file changed; tools/mutants.py lists them) and check a unit test fails for each; MUTANTS_ARGS passes options,
## e.g. MUTANTS_ARGS='--all' (the whole unit suite for each), '--only ID ...', '-j 2' (see --help)
mutants: venv
	@.venv/bin/python -m tools.mutants $(MUTANTS_ARGS)

lint: venv
	@.venv/bin/ruff check .
	@.venv/bin/mypy
	@cd ansible && PATH="$(ROOT)/.venv/bin:$$PATH" ansible-lint -q --profile production
	@command -v shellcheck >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck; } >/dev/null
	@shellcheck -x devenv/*.sh devenv/images/*.sh devenv/hosts/*.sh devenv/hosts/libvirt/*.sh .ci/run

## bench: measure how preview, up and deploy grow with the estate; prints the tables and writes
## docs/benchmarks.md. Items 4-5 need the environment with 8 test nodes (`make up NODES=8` first);
## BENCH_ARGS passes options, e.g. BENCH_ARGS='--items preview --runs 5' (see --help)
bench: toolchain venv
	@.venv/bin/python -m tools.bench $(BENCH_ARGS)

## graph: draw $(STACK)'s resource graph (its state, after `make up`) into docs/$(STACK)-stack-graph.svg
graph: toolchain venv
	@devenv/graph.sh $(STACK)

## preview: `pulumi preview --diff` of $(STACK), with the policy pack in policy/
preview: environment
	@eval "$$(devenv/env.sh)"; pulumi -s $(STACK) preview --diff --policy-pack policy

## adopt: import the Namespace and Secrets that exist on the cluster into $(STACK) instead of creating them
adopt: environment
	@eval "$$(devenv/env.sh)"; .venv/bin/python tools/adopt.py -s $(STACK)
