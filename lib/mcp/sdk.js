"use strict";

// The parts of @modelcontextprotocol/sdk (1.x) the server uses, loaded on
// first use: the package is an optional peer dependency.
const { requirePeer } = require("../peer");

const PEER = { pkg: "@modelcontextprotocol/sdk", what: "kern-sandbox/mcp" };
let sdk = null;

function loadSdk() {
  if (sdk === null) {
    const { Server } = requirePeer("@modelcontextprotocol/sdk/server/index.js", PEER);
    const types = requirePeer("@modelcontextprotocol/sdk/types.js", PEER);
    sdk = {
      Server,
      ListToolsRequestSchema: types.ListToolsRequestSchema,
      CallToolRequestSchema: types.CallToolRequestSchema,
      JSONRPCMessageSchema: types.JSONRPCMessageSchema,
      McpError: types.McpError,
      ErrorCode: types.ErrorCode,
    };
  }
  return sdk;
}

module.exports = { loadSdk };
