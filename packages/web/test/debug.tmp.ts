import { startWebHarness } from './harness.ts';
const web = await startWebHarness();
try {
  const page = await web.newPage();
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) console.log('nav', f.url().slice(0, 150)); });
  await web.signIn(page, 'svc-admin');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForTimeout(3000);
  console.log(page.url(), (await page.content()).slice(0, 1500));
  const b = page.getByRole('button', { name: /yes|sign out|log ?out/i });
  console.log('buttons', await page.getByRole('button').allTextContents());
  await page.getByRole('button').first().click();
  await page.waitForTimeout(3000);
  console.log(page.url(), (await page.locator('body').innerText()).slice(0, 500));
} finally { await web.close(); }
