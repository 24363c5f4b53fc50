# KafkaIQ build. `make` builds build/kafkaiq; `make run` starts a broker on
# 127.0.0.1:9092; `make test` runs every suite and prints "N passed, N failed".
CC      ?= cc
BUILD   ?= build
CFLAGS  ?= -O2 -g
# Flags the build needs whatever CFLAGS a caller (luarocks, CI) passes.
KIQ_CFLAGS := -std=c11 -fPIC -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Werror=implicit-function-declaration -Werror=incompatible-pointer-types \
           -pthread -Iengine -I$(BUILD)/gen -I/usr/include/luajit-2.1 -MMD -MP
ENGINE_LIBS := -lev -llz4 -lzstd -lz -lsnappy -lmicrohttpd -ljansson -lpcre2-8 -lcjose -lisal -lssl -lcrypto -lpthread -lm
LDLIBS  := $(ENGINE_LIBS) -lluajit-5.1 -ldl
LUAJIT  ?= luajit

ENGINE_SRC := $(shell find engine -name '*.c' ! -path 'engine/cmd/*' | sort)
CMD_SRC    := $(wildcard engine/cmd/*.c)
SCHEMA     := $(sort $(wildcard engine/proto/schema/*.lua)) $(sort $(wildcard engine/proto/schema/data/*.lua))
GEN_C      := $(BUILD)/gen/proto/messages.c
GEN_H      := $(BUILD)/gen/proto/messages.h
GEN_SAMPLE := $(BUILD)/gen/proto/messages_sample.c
GEN_LUA    := $(BUILD)/gen/lua/messages_lua.c $(BUILD)/gen/lua/messages_lua.h
GEN_SURFACE := $(BUILD)/gen/api/surface.c
GEN_EMBED  := $(BUILD)/gen/lua/hook_answers.c
# The live page's files, each embedded as kiq_page_<name with _ for .>.
PAGE_SRC   := $(sort $(wildcard engine/http/page/*))
PAGE_OBJ   := $(PAGE_SRC:engine/http/page/%=$(BUILD)/obj/gen/http/%.o)
ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/messages.o $(BUILD)/obj/gen/lua/messages_lua.o \
              $(BUILD)/obj/gen/api/surface.o $(BUILD)/obj/gen/lua/hook_answers.o $(PAGE_OBJ)
CMD_OBJ    := $(CMD_SRC:%.c=$(BUILD)/obj/%.o)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

# The unit tests again with ASan and UBSan (any finding fails the binary).
SAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

# make fuzz FUZZ_SECONDS=N runs each libFuzzer target (tests/fuzz) N seconds.
FUZZ_SECONDS ?= 60

.PHONY: all deps run test unit sanitize fuzz bench install uninstall deb clean
all: $(BUILD)/kafkaiq $(BUILD)/lua/kafkaiq/core.so

deps:
	@scripts/deps.sh

$(GEN_H) $(GEN_C) $(GEN_SAMPLE) $(GEN_LUA) &: scripts/gen_codec.lua $(SCHEMA)
	@mkdir -p $(BUILD)/gen/proto $(BUILD)/gen/lua
	$(LUAJIT) scripts/gen_codec.lua $(BUILD)/gen $(SCHEMA)

$(GEN_SURFACE): scripts/gen_surface.lua engine/api/surface.lua $(SCHEMA)
	@mkdir -p $(dir $@)
	$(LUAJIT) scripts/gen_surface.lua $@ engine/api/surface.lua $(SCHEMA)

$(BUILD)/obj/gen/api/surface.o: $(GEN_SURFACE) $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KIQ_CFLAGS) -c -o $@ $<

$(GEN_EMBED): scripts/embed.lua engine/lua/hook_answers.lua
	@mkdir -p $(dir $@)
	$(LUAJIT) scripts/embed.lua engine/lua/hook_answers.lua $@ kiq_hook_answers_lua

$(BUILD)/obj/gen/lua/hook_answers.o: $(GEN_EMBED)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KIQ_CFLAGS) -c -o $@ $<

$(BUILD)/obj/gen/lua/messages_lua.o: $(BUILD)/gen/lua/messages_lua.c $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KIQ_CFLAGS) -c -o $@ $<

$(BUILD)/gen/http/%.c: engine/http/page/% scripts/embed.lua
	@mkdir -p $(dir $@)
	$(LUAJIT) scripts/embed.lua $< $@ kiq_page_$(subst .,_,$*)

$(BUILD)/obj/gen/http/%.o: $(BUILD)/gen/http/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KIQ_CFLAGS) -c -o $@ $<

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/proto/%.c $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KIQ_CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.o: %.c $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KIQ_CFLAGS) -c -o $@ $<

$(BUILD)/libkiq.a: $(ENGINE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/kafkaiq: $(CMD_OBJ) $(BUILD)/libkiq.a
	$(CC) $(CFLAGS) $(KIQ_CFLAGS) -rdynamic -o $@ $(CMD_OBJ) $(BUILD)/libkiq.a $(LDLIBS)

# The Lua C module: the host (luajit or kafkaiq) provides the Lua symbols.
$(BUILD)/lua/kafkaiq/core.so: $(BUILD)/libkiq.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KIQ_CFLAGS) -shared -o $@ -Wl,--whole-archive $(BUILD)/libkiq.a -Wl,--no-whole-archive $(ENGINE_LIBS)

TEST_SUPPORT_OBJ := $(patsubst tests/unit/support/%.c,$(BUILD)/obj/tests/support/%.o,$(wildcard tests/unit/support/*.c))

$(BUILD)/obj/tests/support/%.o: tests/unit/support/%.c $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(KIQ_CFLAGS) -Itests/unit -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libkiq.a $(BUILD)/obj/gen/messages_sample.o $(TEST_SUPPORT_OBJ)
	@mkdir -p $(dir $@)
	@mkdir -p $(BUILD)/obj/tests
	$(CC) $(CFLAGS) $(KIQ_CFLAGS) -MF $(BUILD)/obj/tests/$*.d -Itests/unit -o $@ $< $(BUILD)/obj/gen/messages_sample.o $(TEST_SUPPORT_OBJ) $(BUILD)/libkiq.a $(LDLIBS) -lcmocka

unit: $(UNIT_BIN)

sanitize:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/san CFLAGS="$(SAN_CFLAGS)" unit

fuzz: deps
	@scripts/fuzz.sh run $(FUZZ_SECONDS)

run: deps all
	@mkdir -p data
	$(BUILD)/kafkaiq serve config/server.properties

test: deps all unit sanitize
	@scripts/run-tests.sh

bench: deps all
	@scripts/bench.sh

# Installed by `luarocks make` (which sets BINDIR, LUADIR and LIBDIR) or by
# hand: `sudo make install`, `make install PREFIX=$HOME/.local`, or staged
# with DESTDIR (scripts/deb.sh). The command finds its Lua modules from where
# it is, in <bin>/../share/lua/5.1 (engine/cmd/main.c), so LUADIR is best left
# beside BINDIR; kafkaiq.core is built into the command, and core.so in LIBDIR
# is for a plain luajit's `require "kafkaiq"`. The live page is built in; the
# serve defaults need no file. DATADIR holds the examples and labs (run them
# with `kafkaiq run`) and a sample server.properties; it follows BINDIR so
# that luarocks, which leaves PREFIX alone, keeps them inside its tree.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LUADIR  ?= $(PREFIX)/share/lua/5.1
LIBDIR  ?= $(PREFIX)/lib/lua/5.1
DATADIR ?= $(abspath $(BINDIR)/..)/share/kafkaiq
install: $(BUILD)/kafkaiq $(BUILD)/lua/kafkaiq/core.so
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/kafkaiq $(DESTDIR)$(DATADIR)
	install -m 0755 $(BUILD)/kafkaiq $(DESTDIR)$(BINDIR)/kafkaiq
	for f in $$(cd lua && find . -name '*.lua'); do install -D -m 0644 lua/$$f $(DESTDIR)$(LUADIR)/$$f; done
	install -m 0644 $(BUILD)/lua/kafkaiq/core.so $(DESTDIR)$(LIBDIR)/kafkaiq/core.so
	for f in $$(find examples -name '*.lua'); do install -D -m 0644 $$f $(DESTDIR)$(DATADIR)/$$f; done
	install -m 0644 config/server.properties $(DESTDIR)$(DATADIR)/server.properties

# The same variables as install took.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/kafkaiq $(DESTDIR)$(LIBDIR)/kafkaiq/core.so
	for f in $$(cd lua && find . -name '*.lua'); do rm -f $(DESTDIR)$(LUADIR)/$$f; done
	for f in $$(find examples -name '*.lua'); do rm -f $(DESTDIR)$(DATADIR)/$$f; done
	rm -f $(DESTDIR)$(DATADIR)/server.properties
	for d in $(DESTDIR)$(LUADIR)/kafkaiq/client $(DESTDIR)$(LUADIR)/kafkaiq $(DESTDIR)$(LIBDIR)/kafkaiq \
	         $(DESTDIR)$(DATADIR)/examples/labs $(DESTDIR)$(DATADIR)/examples $(DESTDIR)$(DATADIR); do \
	    rmdir "$$d" 2>/dev/null || true; done

# build/kafkaiq_<version>_<arch>.deb: the install above under /usr (scripts/deb.sh).
deb: all
	@BUILD=$(BUILD) scripts/deb.sh

clean:
	rm -rf $(BUILD)

# Kept between runs: the unit tests link it, and make must not print after
# the test summary line.
.SECONDARY: $(BUILD)/obj/gen/messages_sample.o $(TEST_SUPPORT_OBJ) $(PAGE_SRC:engine/http/page/%=$(BUILD)/gen/http/%.c)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
