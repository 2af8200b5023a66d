# The two set-up commands (Debian 12, as root): `make run` and `make check`. Both idempotent.
BUILD      ?= build
ASAN_BUILD ?= build-asan
CMD        ?= /usr/bin/python3 -c "import platform, os; print('hello from', platform.node(), 'as uid', os.getuid(), 'in', os.getcwd())"

.PHONY: all deps build run check test asan fuzz bench clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) --buildtype=debugoptimized

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# hull's main job: run a command in a fresh sandbox.
run: build
	./$(BUILD)/hull exec -- $(CMD)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false

asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)

# The whole suite on the normal build, then again under ASan+UBSan.
check: build asan
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	 scripts/check.sh $(BUILD) $(ASAN_BUILD)

test: build
	@scripts/run-tests.sh $(BUILD)

fuzz: deps
	@scripts/fuzz.sh

bench: build
	@bench/run.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
