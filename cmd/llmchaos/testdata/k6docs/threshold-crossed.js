// expect: exit 99
// A threshold that the slow endpoint crosses: k6 runs to the end and exits 99.
import http from 'k6/http';

export const options = {
  iterations: 3,
  thresholds: {
    http_req_duration: ['p(95)<1'],
  },
};

export default function () {
  http.get(`${__ENV.BASE_URL}/slow`);
}
