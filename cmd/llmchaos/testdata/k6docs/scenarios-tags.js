// expect: exit 0
// Two scenarios with their own tags, and thresholds selecting each (k6's
// docs: "Scenarios", "Tags and groups").
import http from 'k6/http';

export const options = {
  scenarios: {
    browse: { executor: 'shared-iterations', vus: 2, iterations: 4, tags: { flow: 'browse' } },
    api: { executor: 'per-vu-iterations', vus: 1, iterations: 3, exec: 'api', startTime: '100ms' },
  },
  thresholds: {
    'http_reqs{scenario:browse}': ['count==4'],
    'http_reqs{scenario:api}': ['count==3'],
    'http_req_duration{flow:browse}': ['max<2000'],
    'http_req_failed{expected_response:true}': ['rate==0'],
  },
};

export default function () {
  http.get(`${__ENV.BASE_URL}/`);
}

export function api() {
  http.post(`${__ENV.BASE_URL}/api/echo`, JSON.stringify({ ok: true }), { headers: { 'Content-Type': 'application/json' } });
}
