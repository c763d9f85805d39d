// An exception in an iteration fails that iteration only: each VU's third
// iteration throws, the run goes on and counts them in iterations_failed.
import { sleep } from 'k6';

export const options = {
  scenarios: { errors: { executor: 'per-vu-iterations', vus: 3, iterations: 3 } },
};

export default function () {
  sleep(0.01);
  if (__ITER === 2) {
    throw new Error('third iteration of VU ' + __VU + ' fails');
  }
}
