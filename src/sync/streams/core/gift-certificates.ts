import { date, id, numeric } from '../../columns.ts';
import { defineRestStream } from '../rest.ts';

/**
 * Gift certificates. This list answers a bare array without Data* headers, so
 * the pager stops on a short page. Read whole on every run: the spec does not
 * say that it honours ModifiedOn filters.
 */
export default defineRestStream({
  resource: 'giftcertificates',
  path: '/giftcertificates',
  idField: 'GiftCertificateId',
  mode: 'full',
  variants: ['core'],
  table: {
    name: 'gift_certificates',
    columns: {
      company_id: id('CompanyId', { doc: 'The company (location) that issued it: companies.id.' }),
      customer_id: id('CustomerId', { doc: 'The customer it belongs to: customers.id.' }),
      amount: numeric('Amount', { doc: 'The value it was issued for.' }),
      balance: numeric('Balance', { doc: 'The value left to spend.' }),
      issued_on: date('IssuedOn', { doc: 'The date it was issued.' }),
    },
  },
});
