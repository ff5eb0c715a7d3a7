"use strict";
module.exports = {};
