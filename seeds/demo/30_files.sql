-- A filesystem-like tree of file:/// resources: directories (trailing /) are rows too, with a short
-- description as their text; reading one returns it and its immediate children.
insert into pgmcp.resources (uri, name, title, mime_type, text, tags, readers)
values
  ('file:///handbook/', 'handbook', 'Company handbook', 'inode/directory',
   'The company handbook: policies, team guides and assets.', array['handbook'], array['engineering', 'support', 'finance']),
  ('file:///handbook/README.md', 'README.md', 'Handbook overview', 'text/markdown',
   E'# Handbook\n\nStart with [policies](file:///handbook/policies/) and your team''s guide under\n[teams](file:///handbook/teams/).\n',
   array['handbook'], array['engineering', 'support', 'finance']),
  ('file:///handbook/policies/', 'policies', 'Policies', 'inode/directory',
   'Company-wide policies.', array['handbook'], array['engineering', 'support', 'finance']),
  ('file:///handbook/policies/security.md', 'security.md', 'Security policy', 'text/markdown',
   E'# Security policy\n\n- Use the password manager.\n- Report incidents in #security within one hour.\n- Production access is granted per role and reviewed quarterly.\n',
   array['handbook', 'security'], array['engineering', 'support', 'finance']),
  ('file:///handbook/policies/expenses.md', 'expenses.md', 'Expense policy', 'text/markdown',
   E'# Expenses\n\nSubmit receipts within 30 days. Travel over 2,000 EUR needs approval from finance.\n',
   array['handbook', 'finance'], array['engineering', 'support', 'finance']),
  ('file:///handbook/teams/', 'teams', 'Team guides', 'inode/directory',
   'One folder per team.', array['handbook'], array['engineering', 'support', 'finance']),
  ('file:///handbook/teams/engineering/', 'engineering', 'Engineering guide', 'inode/directory',
   'How engineering works.', array['engineering'], array['engineering']),
  ('file:///handbook/teams/engineering/oncall.md', 'oncall.md', 'On-call guide', 'text/markdown',
   E'# On-call\n\nPrimary answers pages within 5 minutes. Hand off every Monday at 10:00 UTC.\nRunbooks live under notes:///oncall/.\n',
   array['engineering', 'oncall'], array['engineering']),
  ('file:///handbook/teams/engineering/deploys.md', 'deploys.md', 'Deploy guide', 'text/markdown',
   E'# Deploys\n\nDeploy from main only, behind a feature flag, never on Fridays after 15:00.\n',
   array['engineering'], array['engineering']),
  ('file:///handbook/teams/support/', 'support', 'Support guide', 'inode/directory',
   'How support works.', array['support'], array['support']),
  ('file:///handbook/teams/support/macros.md', 'macros.md', 'Reply macros', 'text/markdown',
   E'# Macros\n\n- **refund-ok**: confirm the refund and its timeline (5 business days).\n- **needs-logs**: ask for the request id and time.\n',
   array['support'], array['support']),
  ('file:///handbook/teams/finance/', 'finance', 'Finance guide', 'inode/directory',
   'How finance works.', array['finance'], array['finance']),
  ('file:///handbook/teams/finance/close.md', 'close.md', 'Month-end close', 'text/markdown',
   E'# Month-end close\n\n1. Reconcile the ledger.\n2. Accrue open invoices.\n3. Review with the controller by day 5.\n',
   array['finance'], array['finance']),
  ('file:///assets/', 'assets', 'Brand assets', 'inode/directory',
   'Logos and brochures.', array['assets'], array['engineering', 'support', 'finance'])
on conflict (uri) do nothing;

-- Binary resources: a real 32x32 PNG logo and a one-page PDF, served as base64 blobs.
insert into pgmcp.resources (uri, name, title, description, mime_type, blob, tags, audience, priority, readers)
values
  ('file:///assets/logo.png', 'logo.png', 'pgmcp logo', 'The 32x32 logo (PNG).', 'image/png',
   decode('iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAADoklEQVR42uXWb8etWBjH8fPChsMmImKziYiIiMZSWSrLLkslTZKvJEm2eaUzT2YzN7Odfc65h2F6enX5WH9c6/flj3/5+/L/A4Jf+WTgJnAErsAT+IJAEAoiQSwQglTwU8A14ZbgJLgJXoKfECSECVFCnCAS0gSZ8COAlWFnXDNuGU6Gm+Fl+BlBRpgRZcQZIiPNkBlFhsr4DsCUWBJbcpXcJI7ElXgSXxJIQkkkiSVCkkqkpJAoSSV5CzByzBwrx8655txynBw3x8vxc4KcMCfKiXNETpojc4oclVPl6Jw3gBKzxCqxS64ltxKnxC3xSvySoCQsiUriElGSlsiSokSVVCW6/BZwURgKU2EpbPXWjZSKQqEUlUIr2o9dH4Cvdy53jDvmHeuOfX8PuFPcUXeqO/pOe6f/W+NHoOZSY9SYNVaNXf/1n1Pj1ng1fk1QE9ZENfGzKmuKGlVT1eiatqavXwGai8bQmBpLY+snoHE1nsbXBJpQE2niZ1VqCo3SVBqtaTW9fgU0XBqMBrPBarCbJ9DgNngNfkPQEDZEDfGzKhuKBtVQNeiGtqFvXgEdlw6jw+ywOuzuvTPoKDpUR9WhO9qOvvsn4Jeerz2XHqPH7LF67P49oKfoUT1Vj+5pe/qe3569H1cwcBkwBswBa8Aenls04A54A/5AMBAORAPxgBhIB+RAMaAGqgE90A70w6stGrmMGCPmiDVij09gxB3xRvyRYCQciUbiETGSjsiRYkSNVCN6pB3px1fAxGXCmDAnrAl7egIT7oQ34U8EE+FENBFPiIl0Qk4UE2qimtAT7UQ/vQJmLjPGjDljzdjzE5hxZ7wZfyaYCWeimXhGzKQzcqaYUTPVjJ5pZ/r5FQAXMMAEC2yeALjggQ8BhBBBDAJSkFCAggo0tNDD61m0YCyYC9aCvXBduC04C+6Ct+AvBAvhQrQQL4iFdEEuFAtqoVrQC+3Ct6bpirlirdgr15XbirPirngr/kqwEq5EK/GKWElX5EqxolaqFb2+M643zA1rw964btw2nA13w9vwN4KNcCPaiDfERrohN4oNtVFt6I33XrQda8feue7cdpwdd8fb8XeCnXAn2ol3xE66I3eKHbVT7XzPm3xgH1wPbgfOgXvgHfgHwUF4EB3EB+IgPZAHxYE6+KFUcXI7cU7cE+/EPwlOwpPoJD4RJ+mJPPm5XPTAeeA+8B74D4IH4YPoQfxAPEgffHay+/2zk91/Pfz+CU1cQp2ZI9NZAAAAAElFTkSuQmCC', 'base64'), array['assets'], array['user'], 0.3, array['engineering', 'support', 'finance']),
  ('file:///assets/brochure.pdf', 'brochure.pdf', 'Product brochure', 'A one-page product brochure (PDF).',
   'application/pdf', decode('JVBERi0xLjQKMSAwIG9iago8PCAvVHlwZSAvQ2F0YWxvZyAvUGFnZXMgMiAwIFIgPj4KZW5kb2JqCjIgMCBvYmoKPDwgL1R5cGUgL1BhZ2VzIC9LaWRzIFszIDAgUl0gL0NvdW50IDEgPj4KZW5kb2JqCjMgMCBvYmoKPDwgL1R5cGUgL1BhZ2UgL1BhcmVudCAyIDAgUiAvTWVkaWFCb3ggWzAgMCA2MTIgNzkyXSAvUmVzb3VyY2VzIDw8IC9Gb250IDw8IC9GMSA0IDAgUiA+PiA+PiAvQ29udGVudHMgNSAwIFIgPj4KZW5kb2JqCjQgMCBvYmoKPDwgL1R5cGUgL0ZvbnQgL1N1YnR5cGUgL1R5cGUxIC9CYXNlRm9udCAvSGVsdmV0aWNhID4+CmVuZG9iago1IDAgb2JqCjw8IC9MZW5ndGggMTM2ID4+CnN0cmVhbQpCVCAvRjEgMjQgVGYgNzIgNzIwIFRkIChwZ21jcCBkZW1vIGJyb2NodXJlKSBUaiAwIC0zNiBUZCAvRjEgMTIgVGYgKFBvc3RncmVzIHJlc291cmNlcyBmb3IgQUkgYWdlbnRzLCBlbmZvcmNlZCBieSBQb3N0Z3JlcyByb2xlcy4pIFRqIEVUCmVuZHN0cmVhbQplbmRvYmoKeHJlZgowIDYKMDAwMDAwMDAwMCA2NTUzNSBmIAowMDAwMDAwMDA5IDAwMDAwIG4gCjAwMDAwMDAwNTggMDAwMDAgbiAKMDAwMDAwMDExNSAwMDAwMCBuIAowMDAwMDAwMjQxIDAwMDAwIG4gCjAwMDAwMDAzMTEgMDAwMDAgbiAKdHJhaWxlcgo8PCAvU2l6ZSA2IC9Sb290IDEgMCBSID4+CnN0YXJ0eHJlZgo0OTgKJSVFT0YK', 'base64'), array['assets'], array['user'], 0.2,
   array['engineering', 'support', 'finance'])
on conflict (uri) do nothing;
