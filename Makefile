# Thin wrapper around CMake. `make demo` and `make test` install what is
# missing (tools/install-deps) and build first.
BUILD ?= build
BUILD_TEST ?= build-test
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build demo test test-distro bench bench-record bench-replay bench-replay-memory bench-replay-cluster bench-replay-diff deps clean captures conformance fuzz-smoke install-plugin

all: build

# tools/install-deps names the packages of the release it runs on; a profile
# per job (build, test, fuzz, bench).
deps:
	@tools/install-deps build

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DKWIRE_TESTS=OFF $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# The Wireshark plugin into the personal plugin folder of the user running
# make, for the installed Wireshark's version (PLUGIN_DIR=... for another
# folder, e.g. the global one: /usr/lib/x86_64-linux-gnu/wireshark/plugins/4.0/epan).
# tshark run as root ignores personal plugin folders: root needs the global one.
WS_VERSION = $(shell pkg-config --modversion wireshark 2>/dev/null | cut -d. -f1,2)
PLUGIN_DIR ?= $(HOME)/.local/lib/wireshark/plugins/$(WS_VERSION)/epan
install-plugin: build
	@test -n "$(WS_VERSION)" || { echo "install-plugin: wireshark-dev is missing (tools/install-deps)" >&2; exit 1; }
	install -d "$(PLUGIN_DIR)"
	install -m 644 $(BUILD)/wireshark/kwire.so "$(PLUGIN_DIR)/kwire.so"
	@echo "installed $(PLUGIN_DIR)/kwire.so; check with: tshark -G plugins | grep kwire"

# kwire installed like a Linux tool: the command, its man pages and bash
# completion, kwire.so and kwire.lua (cmake/KwireInstall.cmake). With PREFIX
# Wireshark's own (/usr on Debian) the plugin goes into Wireshark's global
# folders; under another prefix it goes to the same path below PREFIX, and the
# install says that Wireshark does not look there. DESTDIR=DIR stages the tree.
PREFIX ?= /usr/local
.PHONY: install deb
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# The Debian package of the Release build, $(BUILD)/kwire_<version>_<arch>.deb:
# CPack, with Depends computed by dpkg-shlibdeps (dpkg-dev) for this release.
# Check it with dpkg-deb -I and -c; tests/install/smoke.sh after installing it.
deb: build
	rm -f $(BUILD)/kwire_*.deb
	cd $(BUILD) && cpack -G DEB
	@ls $(BUILD)/kwire_*.deb

# Decodes the bundled capture and prints its streams-group frames.
STREAMS_APIS = StreamsGroupHeartbeat,StreamsGroupDescribe,StreamsGroupTopologyDescriptionUpdate,DescribeTopicPartitions,DeleteGroups
demo: build
	$(BUILD)/kwire decode -r captures/demo.pcapng --api $(STREAMS_APIS) --stats
	$(BUILD)/kwire decode -r captures/demo.pcapng --api StreamsGroupTopologyDescriptionUpdate -V -c 1
	@for f in captures/*.pcapng; do printf '%-34s ' "$$f"; $(BUILD)/kwire decode -r $$f --stats -c 0; done

# Regenerates the real captures from scratch: one fresh Kafka 4.4.0 broker per
# scenario, recorded with `kwire record -i lo --auto` of this build (root); see
# captures/MANIFEST.md. Needs Java 17 and Maven. SCENARIOS="stateful admin" limits
# it; "appendix" rewrites demo.pcapng.
SCENARIOS ?=
captures: build
	@tools/install-deps test
	KWIRE=$(BUILD)/kwire testbed/make-captures $(SCENARIOS)

# Every test, through ctest, with warnings as errors and ASan+UBSan: unit and
# golden tests, the real captures, the live broker test, full conformance with
# Kafka's serializers and a 60 s fuzz smoke run per target. Beside it, in the
# background from the start: kwire built, loaded into tshark and installed as
# a .deb in clean Debian 13 and sid chroots (tests/distro; DISTROS= for none,
# logs in $(BUILD_TEST)/distro/).
DISTROS ?= trixie sid
test:
	@tools/install-deps test
	@mkdir -p $(BUILD_TEST)/distro
	@if [ -n "$(strip $(DISTROS))" ]; then \
	  setsid tests/distro/run-all $(BUILD_TEST)/distro $(DISTROS) > $(BUILD_TEST)/distro/summary 2>&1 & distro=$$!; \
	else echo "release chroot tests: not run (DISTROS is empty)" > $(BUILD_TEST)/distro/summary; distro=; fi; \
	trap '[ -z "$$distro" ] || kill -TERM -- -$$distro 2>/dev/null' INT TERM; \
	rc=0; \
	{ cmake -S . -B $(BUILD_TEST) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKWIRE_WERROR=ON -DKWIRE_SANITIZE=ON $(CMAKE_FLAGS) && \
	  cmake --build $(BUILD_TEST) -j $(JOBS) && \
	  (cd $(BUILD_TEST) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)); } || rc=1; \
	echo "conformance summaries (ctest -R conformance -V prints them too):"; \
	grep -h '^conformance: \|^kafka-reserialize: ' $(BUILD_TEST)/Testing/Temporary/LastTest.log 2>/dev/null | sort -u; \
	if [ -n "$$distro" ]; then echo "waiting for the release chroot tests (tests/distro)..."; wait $$distro || rc=1; fi; \
	cat $(BUILD_TEST)/distro/summary; \
	exit $$rc

# The release chroot tests alone (root; tests/distro/distro_test.sh).
test-distro:
	@tools/install-deps test
	tests/distro/run-all $(BUILD_TEST)/distro $(DISTROS)

bench:
	@tools/install-deps bench
	cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DKWIRE_BENCH=ON -DKWIRE_TESTS=OFF
	cmake --build build-bench -j $(JOBS)
	bench/run-all build-bench

# Live capture on loopback at rising Kafka message rates: kwire record --auto
# against tcpdump, same session, alternating (root). See bench/record-bench.
bench-record:
	@tools/install-deps bench
	cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DKWIRE_BENCH=ON -DKWIRE_TESTS=OFF
	cmake --build build-bench -j $(JOBS) --target kwire kwire-loopgen
	bench/record-bench build-bench

# kwire replay against a canned-response loopback responder: requests/s and
# per CPU-second in fast mode, gap error with recorded timing. See bench/replay-bench.
bench-replay:
	@tools/install-deps bench
	cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DKWIRE_BENCH=ON -DKWIRE_TESTS=OFF
	cmake --build build-bench -j $(JOBS) --target kwire kwire-replay-fixture
	bench/replay-bench build-bench

# kwire replay's peak RSS as the capture grows 1, 4 and 16 times (fast timing,
# most answers differing), beside kwire decode -c 0 of the same captures. See
# bench/replay-memory.
bench-replay-memory:
	@tools/install-deps bench
	cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DKWIRE_BENCH=ON -DKWIRE_TESTS=OFF
	cmake --build build-bench -j $(JOBS) --target kwire kwire-replay-fixture
	bench/replay-memory build-bench

# kwire replay to three targets at once (differential) against one: CPU per
# recorded request, same session. See bench/replay-diff-bench.
bench-replay-diff:
	@tools/install-deps bench
	cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DKWIRE_BENCH=ON -DKWIRE_TESTS=OFF
	cmake --build build-bench -j $(JOBS) --target kwire kwire-replay-fixture
	bench/replay-diff-bench build-bench

# kwire replay into a real 3-node cluster (testbed/run-cluster, Java and Maven):
# requests per CPU-second and routing's share under perf. See bench/replay-cluster-bench.
bench-replay-cluster:
	@tools/install-deps bench
	cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DKWIRE_BENCH=ON -DKWIRE_TESTS=OFF
	cmake --build build-bench -j $(JOBS) --target kwire
	bench/replay-cluster-bench build-bench

# Conformance with Kafka's own serializers: rebuilds the full corpus with
# kafka-clients 4.4.0 (JDK + Maven) and runs both directions.
conformance:
	tools/conformance

# Each libFuzzer target for 60 s (the release's clang, ASan+UBSan), seeded from the
# conformance corpus, the captures and the specs.
fuzz-smoke:
	tools/fuzz-smoke

clean:
	rm -rf $(BUILD) $(BUILD_TEST) build-bench build-conformance build-fuzz
