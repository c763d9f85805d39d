// expect: exit 99
// Checks with tags and groups, and a threshold on a tag of the checks
// (k6's docs: checks{myTag:hola}); the tagged check fails half the time.
import http from 'k6/http';
import { check, group } from 'k6';

export const options = {
  iterations: 4,
  thresholds: {
    'checks{myTag:hola}': ['rate>0.9'],
    'http_req_duration{name:front}': ['p(95)<2000'],
  },
};

export default function () {
  group('front page', function () {
    const res = http.get(`${__ENV.BASE_URL}/`, { tags: { name: 'front' } });
    check(res, { 'is status 200': (r) => r.status === 200 }, { myTag: 'hola' });
    check(res, { 'even iteration': () => __ITER % 2 === 0 }, { myTag: 'hola' });
  });
}
