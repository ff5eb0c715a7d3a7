{
  "targets": [
    {
      "target_name": "kern_sandbox",
      "sources": [
        "csrc/core/compat.c",
        "csrc/core/envfd.c",
        "csrc/core/outbuf.c",
        "csrc/core/proc.c",
        "csrc/core/supervisor.c",
        "csrc/napi/binding.c",
        "csrc/napi/errnames.c",
        "csrc/napi/run.c",
        "csrc/napi/util.c"
      ],
      "defines": ["NAPI_VERSION=8"],
      "cflags": [
        "-std=gnu11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-fvisibility=hidden",
        "-fno-strict-aliasing"
      ],
      "cflags!": ["-fno-exceptions"],
      "conditions": [
        ["OS!='linux'", { "type": "none" }]
      ]
    }
  ]
}
