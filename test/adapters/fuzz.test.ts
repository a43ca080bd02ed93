import { describe } from 'vitest';
import { adapters } from '../../src/adapters/index.js';
import { adapterSuite } from './suite.js';

// Every registered adapter, from its descriptor and test/fixtures/adapters.ts alone: config
// validation, sample shapes and fuzzing (test/adapters/suite.ts).
describe.each(adapters.map((descriptor) => [descriptor.name, descriptor] as const))(
  'the %s adapter',
  (_name, descriptor) => {
    adapterSuite(descriptor);
  },
);
