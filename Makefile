# For those who have make: each target is the same command of ./build.sh, which is what the
# README and CI use (a fresh Debian 12 has no make).
CMD ?=
.PHONY: all build run check test asan fuzz bench eval clean
all: build
build run check test asan fuzz bench eval clean:
	@./build.sh $@ $(CMD)
