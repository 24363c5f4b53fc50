-- Installs the kafkaiq Lua module (kafkaiq, kafkaiq.core, kafkaiq.*) and the kafkaiq command.
package = "kafkaiq"
version = "0.1.0-1"
source = {
   url = "git+file:///dev/null",
}
description = {
   summary = "A Kafka broker engine in C, scriptable from LuaJIT",
   detailed = [[
KafkaIQ is a Kafka broker engine that real Kafka clients use unmodified,
built like Kafka inside (processors on libev, a bounded request queue, I/O
threads, segment files and indexes), for understanding, scripting and
testing Kafka.
]],
   license = "Apache-2.0",
}
dependencies = {
   "lua >= 5.1",
}
build = {
   type = "make",
   build_variables = {
      CFLAGS = "$(CFLAGS)",
   },
   install_variables = {
      BINDIR = "$(BINDIR)",
      LUADIR = "$(LUADIR)",
      LIBDIR = "$(LIBDIR)",
   },
}
