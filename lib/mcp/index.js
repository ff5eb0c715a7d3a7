"use strict";

// kern-sandbox/mcp: an MCP server whose tools run code in kern boxes
// (createMcpServer), and the stdio server `kern-sandbox mcp` runs
// (serveStdio). @modelcontextprotocol/sdk is an optional peer dependency,
// loaded when a server is made.
const { createMcpServer, KernMcpServer } = require("./server");
const { serveStdio } = require("./stdio");
const { LineTransport } = require("./transport");
const { DEFAULT_LIMITS } = require("./bound");
const { TOOL_NAMES } = require("./tools");

module.exports = { createMcpServer, KernMcpServer, serveStdio, LineTransport, DEFAULT_LIMITS, TOOL_NAMES };
