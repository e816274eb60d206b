'use strict';
module.exports = { chaos: async () => ({ drill: 'chaos', ok: false }) };
