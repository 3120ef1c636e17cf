/** The util layer's public surface: imported by every other layer. */
export * from './assert.js';
export * from './errors.js';
export * from './hlc.js';
export * from './prng.js';
export * from './log.js';
