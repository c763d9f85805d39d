// expect: exit 0
// k6's Response.submitForm and Response.clickLink examples against the
// stand-in: the login form is submitted with its hidden CSRF token and
// checked box plus the fields given (POST to its action, resolved against
// the page), then the page's link is followed. The stand-in answers 403
// to a form missing a field; every check must pass.
import http from 'k6/http';
import { check } from 'k6';

export const options = {
  iterations: 2,
  thresholds: { checks: ['rate==1'], http_req_failed: ['rate==0'] },
};

export default function () {
  let res = http.get(`${__ENV.BASE_URL}/html`);
  res = res.submitForm({
    formSelector: 'form#login',
    fields: { login: 'admin', password: '123' },
  });
  check(res, {
    'logged in': (r) => r.status === 200 && r.html('h2').text() === 'Welcome, admin!',
    'sent as a form': (r) => r.request.method === 'POST' && r.url === `${__ENV.BASE_URL}/login`,
  });
  res = res.clickLink({ selector: 'a' });
  check(res, {
    'followed the link': (r) => r.status === 200 && r.html().find('#bye').text() === 'Logged out from login',
  });
}
