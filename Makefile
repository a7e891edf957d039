# shardnode — the front door. `make run` and `make test` install missing
# Debian packages first (scripts/install-deps.sh), then build.

ERL_ROOT := $(shell erl -noshell -eval 'io:format("~s",[code:root_dir()]),halt().' 2>/dev/null || echo /usr/lib/erlang)
EI_INC   := $(ERL_ROOT)/usr/include
EI_LIB   := $(ERL_ROOT)/usr/lib

CC      ?= cc
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla -Werror
# libpq's headers: Debian puts them in their own folder.
PQ_INC  := /usr/include/postgresql
# The version, written down once: the application's vsn (c_src/app/version.h).
VERSION := $(shell sed -n 's/.*{vsn, "\(.*\)"}.*/\1/p' erl_wrapper/src/shardnode.app.src)
CFLAGS  := -std=c11 -D_GNU_SOURCE -g $(WARN) -I$(EI_INC) -I$(PQ_INC) -Ic_src -DSHARDNODE_VERSION='"$(VERSION)"'
OPT     := -O2
LDLIBS  := -L$(EI_LIB) -lei -llmdb -lpq -lssl -lcrypto -lbsd -lpthread -ldl
# The node exports its symbols, and all of ei, so entity plugins loaded
# from priv/*.so can call any ei function and entity_reply_unknown.
NODE_LDFLAGS := -rdynamic -Wl,--whole-archive $(EI_LIB)/libei.a -Wl,--no-whole-archive
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

# c_src/ holds one folder per layer (docs/architecture.md); every include
# names its folder ("base/evloop.h"), so a layer's dependencies show in its
# sources and `make check` can refuse a cycle between layers.
SRC      := $(wildcard c_src/*/*.c)
HDR      := $(wildcard c_src/*/*.h)
LIB_SRC  := $(filter-out c_src/app/main.c,$(SRC))
OBJ      := $(SRC:c_src/%.c=build/rel/%.o)
UNIT_SRC := $(wildcard test/unit/*.c)

# make run: the node's name (a long name NAME@HOST, or a short one without
# the host), its cookie, seed nodes to join (comma-separated) and any other
# flags, e.g. make run NAME=c2@127.0.0.1 JOIN=shardnode@127.0.0.1 ARGS='--set plugin_dir=/opt/types'
NODE_COOKIE ?= shardnode
NAME   ?= shardnode@127.0.0.1
COOKIE ?= $(NODE_COOKIE)
JOIN   ?=
ARGS   ?=
NAME_FLAG := $(if $(findstring @,$(NAME)),name,sname)
# the name a shell beside it takes: a@HOST for a long name, a for a short one
PEER_NAME := a$(if $(findstring @,$(NAME)),@$(lastword $(subst @, ,$(NAME))))

PLUGINS := $(patsubst examples/%.c,priv/examples/%.so,$(wildcard examples/*.c))

.PHONY: all c deps run test check analyze unit tsan ct bench bench-ab clean erl erl-check fuzz fuzz-check docs previous-release

all: c erl

# The C node and the example plugins: what rebar3's compile hook builds
# (rebar.config), so it must never call rebar3 itself.
c: priv/shardnode $(PLUGINS)

deps:
	@scripts/install-deps.sh

build/rel/%.o: c_src/%.c $(HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(OPT) -c $< -o $@

# The objects that print the version are built again when it changes: the
# -D in CFLAGS is no prerequisite make would see.
VERSION_USERS := $(shell grep -l '"app/version.h"' $(SRC) $(UNIT_SRC))
$(patsubst c_src/%.c,build/rel/%.o,$(filter c_src/%,$(VERSION_USERS))) \
$(patsubst c_src/%.c,build/asan/obj/%.o,$(filter c_src/%,$(VERSION_USERS))) \
$(patsubst test/unit/%.c,build/asan/obj/unit/%.o,$(filter test/unit/%,$(VERSION_USERS))): \
		erl_wrapper/src/shardnode.app.src

priv/shardnode: $(OBJ) | priv
	$(CC) $(OPT) -o $@ $(OBJ) $(NODE_LDFLAGS) $(LDLIBS)

# Example entity types, built as plugins into priv/examples/: a node loads
# them only when asked (plugin_dir=priv/examples), so an example's name never
# takes one of the user's own types. A plugin needs only the entity API's
# header, c_src/entity/entity.h, and ei.
priv/examples/%.so: examples/%.c c_src/entity/entity.h | priv/examples
	$(CC) $(CFLAGS) -Ic_src/entity $(OPT) -fPIC -shared -o $@ $<

build/rel build/asan priv priv/examples:
	mkdir -p $@

# After the C node: rebar3's compile hook builds it too, and the two must
# not build the same files at once.
erl: c
	rebar3 compile

# Unit tests: Criterion, with AddressSanitizer and UndefinedBehaviorSanitizer;
# one object per source, so that `make -j` builds them side by side.
ASAN_OBJ := $(LIB_SRC:c_src/%.c=build/asan/obj/%.o) $(UNIT_SRC:test/unit/%.c=build/asan/obj/unit/%.o)
build/asan/obj/unit/%.o: test/unit/%.c $(HDR) $(wildcard test/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 $(SAN) -Itest/unit -c $< -o $@

build/asan/obj/%.o: c_src/%.c $(HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 $(SAN) -c $< -o $@

build/asan/unit: $(ASAN_OBJ) | build/asan
	$(CC) $(SAN) -rdynamic -o $@ $(ASAN_OBJ) $(LDLIBS) -lcriterion

# Criterion runs each test in a child whose sanitizer report at exit does not
# change the test's verdict, so a report anywhere in the output fails the run.
unit: build/asan/unit $(PLUGINS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build/asan/unit --jobs 2 \
		>build/asan/unit.out 2>&1; rc=$$?; cat build/asan/unit.out; \
	if grep -q 'ERROR: LeakSanitizer\|ERROR: AddressSanitizer\|runtime error:' build/asan/unit.out; then \
		echo 'unit: a sanitizer reported an error (above)' >&2; exit 1; fi; exit $$rc

# ThreadSanitizer over the code that runs threads: the resolver's look-up
# threads, which hand their answers to the loop through a pipe, and the
# state store's writer and reader threads (an eventfd). A plain
# program, test/tsan/*.c (Criterion's runner cannot run under TSan); any
# race reported fails it.
TSAN_PROGS := $(patsubst test/tsan/%.c,build/tsan/%,$(wildcard test/tsan/*.c))
TSAN_SRC := c_src/base/evloop.c c_src/base/resolver.c c_src/base/log.c c_src/base/histogram.c c_src/store/state_lmdb.c c_src/store/state_lmdb_records.c \
	c_src/store/store_files.c c_src/etf/term.c c_src/etf/term_read.c c_src/etf/term_validate.c c_src/etf/term_map_keys.c c_src/etf/entity_id.c c_src/etf/entity_id_scalar.c c_src/etf/term_tag.c \
	c_src/etf/term_encode.c
build/tsan/%: test/tsan/%.c $(TSAN_SRC) $(HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 -fsanitize=thread -fno-omit-frame-pointer -o $@ $< $(TSAN_SRC) -L$(EI_LIB) -lei -llmdb -lcrypto -lpthread -lm

tsan: $(TSAN_PROGS)
	@for p in $(TSAN_PROGS); do TSAN_OPTIONS=halt_on_error=1 $$p || exit 1; done

# The Erlang side's static checks: xref (calls to functions that do not
# exist, unused locals, deprecated calls) and dialyzer (its first run
# builds a PLT of OTP, about a minute), each failing on any warning.
erl-check: erl
	rebar3 xref
	rebar3 dialyzer

# common_test suites against real OTP nodes, all in one run (make test
# runs them in groups side by side: scripts/run-tests.sh).
ct: all
	rebar3 ct --dir test

# The layers of c_src/ include each other in one direction only, and the
# files of a layer call each other in one direction only (read from the
# objects, so they are built first); files stay within their line limits
# and docs/architecture.md lists every one.
check: c
	@scripts/check-layers.sh
	@scripts/check-tree.sh
	@scripts/check-circles.sh

# The clang static analyzer over every C file, into build/analyze (objects
# built aside, so the node's own build is untouched); any report fails.
analyze:
	scan-build --status-bugs -o build/analyze/report $(MAKE) --no-print-directory -B -j2 \
		$(SRC:c_src/%.c=build/analyze/%.o)

build/analyze/%.o: c_src/%.c $(HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O1 -c $< -o $@

# libFuzzer targets, fuzz/*_fuzz.c, built by clang with ASan and UBSan
# over the parsers they drive; each has a seed corpus in fuzz/corpus/<name>.
# `make fuzz` runs each for FUZZ_SECONDS, growing a working corpus in
# build/fuzz/corpus/<name>; a failure leaves its input in build/fuzz/crashes
# (turn it into a unit test). `make fuzz-check`, part of make test, runs
# each over its checked-in corpus and FUZZ_CHECK_SECONDS more, so a
# regression on a known input fails the build.
FUZZ_PROGS := $(patsubst fuzz/%.c,build/fuzz/%,$(wildcard fuzz/*_fuzz.c))
# The node's sources, built once with the fuzz build's sanitizers into an
# archive: each target links what it calls.
FUZZ_OBJ := $(LIB_SRC:c_src/%.c=build/fuzz/obj/%.o)
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined -I$(EI_INC) -I$(PQ_INC) -Ic_src
FUZZ_SECONDS ?= 600
# Longer inputs add little coverage and slow a target tenfold once its
# corpus holds them (the seeds' long strings): mutated inputs stay below.
FUZZ_MAX_LEN ?= 4096
FUZZ_CHECK_SECONDS ?= 5
# ei itself is built from its sources (erlang-dev ships them) with the same
# sanitizers, so a read past a buffer inside ei is caught too — all but two
# UBSan checks for ei's own idioms, harmless there: pointer-overflow (its
# skip-only decoders add offsets to a NULL destination) and shift (its
# big-endian readers shift a byte into an int's sign bit).
EI_SRC_DIR := $(firstword $(wildcard $(ERL_ROOT)/lib/erl_interface-*/src))
EI_FUZZ_SRC := $(wildcard $(EI_SRC_DIR)/decode/*.c $(EI_SRC_DIR)/encode/*.c) \
	$(addprefix $(EI_SRC_DIR)/misc/,ei_x_encode.c ei_malloc.c get_type.c ei_printterm.c)
EI_FUZZ_OBJ := $(addprefix build/fuzz/ei/,$(notdir $(EI_FUZZ_SRC:.c=.o)))
EI_FUZZ_CFLAGS := -g -O1 -fsanitize=address,undefined -fno-sanitize=pointer-overflow,shift \
	-fno-sanitize-recover=undefined -Ibuild/fuzz/ei -I$(EI_SRC_DIR)/misc -I$(EI_SRC_DIR)/include \
	-I$(EI_SRC_DIR)/decode -I$(EI_SRC_DIR)/encode -I$(EI_INC)
build/fuzz/ei/config.h: fuzz/ei_config.h
	@mkdir -p $(dir $@)
	cp $< $@
build/fuzz/ei/%.o: $(EI_SRC_DIR)/decode/%.c build/fuzz/ei/config.h
	clang -c $(EI_FUZZ_CFLAGS) $< -o $@
build/fuzz/ei/%.o: $(EI_SRC_DIR)/encode/%.c build/fuzz/ei/config.h
	clang -c $(EI_FUZZ_CFLAGS) $< -o $@
build/fuzz/ei/%.o: $(EI_SRC_DIR)/misc/%.c build/fuzz/ei/config.h
	clang -c $(EI_FUZZ_CFLAGS) $< -o $@
build/fuzz/libei_san.a: $(EI_FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^

build/fuzz/obj/%.o: c_src/%.c $(HDR)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -c $< -o $@

build/fuzz/libsn_fuzz.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^

build/fuzz/%_fuzz: fuzz/%_fuzz.c fuzz/fuzz_checks.h build/fuzz/libsn_fuzz.a build/fuzz/libei_san.a $(HDR)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) $(WARN) -fsanitize=fuzzer -o $@ $< build/fuzz/libsn_fuzz.a build/fuzz/libei_san.a \
		-llmdb -lpq -lssl -lcrypto -lbsd -lpthread -ldl -lm

fuzz: $(FUZZ_PROGS)
	@mkdir -p build/fuzz/crashes
	@for p in $(FUZZ_PROGS); do n=$$(basename $$p _fuzz); mkdir -p build/fuzz/corpus/$$n; \
		echo "fuzz: $$n for $(FUZZ_SECONDS) s"; \
		$$p -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) -print_final_stats=1 \
			-artifact_prefix=build/fuzz/crashes/ \
			build/fuzz/corpus/$$n fuzz/corpus/$$n || exit 1; done

fuzz-check: $(FUZZ_PROGS)
	@mkdir -p build/fuzz/crashes
	@for p in $(FUZZ_PROGS); do n=$$(basename $$p _fuzz); rm -rf build/fuzz/check/$$n; mkdir -p build/fuzz/check/$$n; \
		$$p -max_total_time=$(FUZZ_CHECK_SECONDS) -artifact_prefix=build/fuzz/crashes/ \
			build/fuzz/check/$$n fuzz/corpus/$$n >build/fuzz/check/$$n.log 2>&1 \
			|| { tail -40 build/fuzz/check/$$n.log; echo "fuzz-check: $$n failed" >&2; exit 1; }; \
		echo "fuzz-check: $$n: $$(grep -o 'DONE.*' build/fuzz/check/$$n.log | tail -1)"; done

# The previous release's C node, which the upgrade suite runs
# (scripts/build-previous-release.sh; build/previous/ keeps it): make test
# builds it with the other builds, so the suite does not build it while
# other suites run beside it. Where it cannot be built (a shallow clone),
# the suite fails with the reason; the failure is ignored here.
previous-release:
	-@scripts/build-previous-release.sh >/dev/null

# The builds first, two jobs at a time (the machines have two cores), and
# the quick checks; then scripts/run-tests.sh runs the tests: the
# common_test suites, which mostly wait, in two groups side by side, and
# beside them at low priority the unit tests, the static analyzer, the fuzz
# targets over their corpora, xref and dialyzer, and the adoption tests. A
# check that fails there counts one failure in its closing line.
test: deps
	$(MAKE) -j2 $(TSAN_PROGS) $(FUZZ_PROGS) all build/asan/unit previous-release
	$(MAKE) check
	$(MAKE) tsan
	$(MAKE) docs
	scripts/run-tests.sh analyze fuzz-check erl-check

run: deps
	$(MAKE) all
	@echo
	@echo "Starting $(NAME) (cookie: $(COOKIE)). Reach it from another terminal:"
	@echo "  erl -$(NAME_FLAG) $(PEER_NAME) -setcookie $(COOKIE)"
	@echo "    1> net_adm:ping('$(NAME)')."
	@echo "    2> gen_server:call({shardnode, '$(NAME)'}, shard_types)."
	@echo "  iex --$(NAME_FLAG) $(PEER_NAME) --cookie $(COOKIE)"
	@echo "    iex> Node.ping(:'$(NAME)')"
	@echo "    iex> GenServer.call({:shardnode, :'$(NAME)'}, :shard_types)"
	@echo "Stop with Ctrl-C."
	@echo
	exec priv/shardnode --$(NAME_FLAG) '$(NAME)' --cookie '$(COOKIE)' $(if $(JOIN),--join '$(JOIN)') $(ARGS)

# The wrapper's API docs, from its edoc comments: erl_wrapper/doc/index.html.
# Only edoc is needed (Debian: erlang-edoc): no package is installed and
# nothing is compiled, so the docs can be read before anything is built.
docs:
	@command -v erl >/dev/null || { echo "make docs: needs erl and edoc (Debian: erlang-nox erlang-edoc)" >&2; exit 1; }
	erl -noshell -eval 'case edoc:application(shardnode, "erl_wrapper", [{dir, "erl_wrapper/doc"}, {preprocess, true}]) of ok -> halt(0); E -> io:format(standard_error, "~p~n", [E]), halt(1) end.'
	@echo "API docs: erl_wrapper/doc/index.html"

# Benchmarks, side by side with a BEAM baseline (bench/README.md).
bench: all
	bench/run.sh

# Whether this tree is faster than BASE=<commit>: runs of both in turn
# (AB_ROUNDS, 3), each row's ratio per pair of runs (bench/ab.sh).
bench-ab:
	bench/ab.sh

clean:
	rm -rf build priv/shardnode priv/*.so priv/examples _build erl_wrapper/doc
